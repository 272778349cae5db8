; PE (0, 0) streams 12 fp16 values on color 1 to PE (3, 0), three hops east (routes in
; stream-routes.yaml); the consumer scales them by 2 on the way into its memory and reads
; the cycle counter when done.
;   wafersim exec tiny --program examples/programs/stream.s --routes examples/programs/stream-routes.yaml \
;     --dump 3,0:0x100:12:f16 --dump 3,0:0x200:1:u32
.pe 0, 0
.data x, 0x0, f16, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12
.dsd vx, mem, f16, base=x, len=12
.dsd out, fabout, f16, color=1, len=12
.task main, 0
.entry main
main:
  fmov.f16 out, vx          ; first wavelet leaves at 2 + 2 + 1 = 5, one per cycle
  ret
.pe 3, 0
.dsd vy, mem, f16, base=0x100, len=12
.dsd in, fabin, f16, color=1, len=12
.task main, 0
.entry main
main:
  mov.f16 r1, 2.0
  fmul.f16 vy, in, r1       ; wavelets visible from 5 + 1 + 3 + 1 = 10, one per cycle
  tsc r2                    ; 10 + 11 + 1 + 3 (fmul latency) = 25
  st [0x200], r2
  ret
