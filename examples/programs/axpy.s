; y = a x + y on every PE of a 4 x 2 block, in three number formats; each PE times its
; own work with the cycle counter and stores the cycles after the results.
;   wafersim exec tiny --program examples/programs/axpy.s --dump 0,0:0x300:3:u32
.equ N, 64
.pe 0..3, 0..1
.fill x16, 0x000, f16, N, 0.1            ; x and y in different bank pairs: full rate
.fill y16, 0x088, f16, N, 1.0
.fill x32, 0x110, f32, N, 0.1
.fill y32, 0x218, f32, N, 1.0
.dsd vx16, mem, f16, base=x16, len=N
.dsd vy16, mem, f16, base=y16, len=N
.dsd vx32, mem, f32, base=x32, len=N
.dsd vy32, mem, f32, base=y32, len=N
.dsd vyb, mem, bf16, base=0x400, len=N
.task main, 0
.entry main
main:
  mov.f16 r1, 3.0
  tsc r10
  fmac.f16 vy16, vy16, vx16, r1          ; 4 fp16 lanes: 16 steps
  tsc r11
  mov.f32 r2, 3.0
  fmac.f32 vy32, vy32, vx32, r2          ; 1 fp32 lane: 64 steps
  tsc r12
  fcvt.bf16.f32 vyb, vy32                ; round the fp32 results to bf16
  sub r11, r11, r10
  sub r12, r12, r10
  st [0x300], r11                        ; cycles of the fp16 axpy
  st [0x304], r12                        ; cycles of both
  tsc r13
  sub r13, r13, r10
  st [0x308], r13
  ret
