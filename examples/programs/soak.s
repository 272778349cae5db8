; A long run for memory soaks: every PE of an 8 x 8 grid re-activates its task ITER times,
; each time y += 3 x over 64 fp32 elements; the count lives in SRAM. About 70 cycles each.
;   wafersim exec tiny --program examples/programs/soak.s --dump 0,0:0x400:1:u32
.equ ITER, 1000
.pe 0..7, 0..7
.fill x, 0x000, f32, 64, 0.001
.fill y, 0x108, f32, 64, 0.0
.dsd vx, mem, f32, base=x, len=64
.dsd vy, mem, f32, base=y, len=64
.task main, 0
.entry main
main:
  mov.f32 r1, 3.0
  fmac.f32 vy, vy, vx, r1
  ld r2, [0x400]
  add r2, r2, 1
  st [0x400], r2
  beq r2, ITER, done
  activate main
done:
  ret
