; Eight rows of a pipeline: PE (0, y) streams 256 f32 values east; PEs (1..6, y) each add
; their own vector and pass the sum on; PE (7, y) keeps the result. Columns alternate colors 1
; and 2 (a router routes a color one way; pipeline-routes.yaml). The PEs at (4, 2) and (4, 3)
; first compute 48 exponentials on the iterative unit, so their rows wait: upstream PEs stall on
; credits (fabric_out), downstream ones on data (fabric_in).
;   wafersim exec tiny --program examples/programs/pipeline.s --routes examples/programs/pipeline-routes.yaml \
;     --trace windows,timeline --trace-pes 3,2:5,2 -o pipe && wafersim report pipe
.pe 0, 0..7
.fill x, 0x0, f32, 256, 1.0
.dsd vx, mem, f32, base=x, len=256
.dsd out, fabout, f32, color=1, len=256
.task main, 0
.entry main
main:
  fmov.f32 out, vx
  ret
.pe 1, 0..7
.fill x, 0x0, f32, 256, 1.0
.dsd vx, mem, f32, base=x, len=256
.dsd in, fabin, f32, color=1, len=256
.dsd out, fabout, f32, color=2, len=256
.task main, 0
.entry main
main:
  fadd.f32 out, in, vx
  ret
.pe 2, 0..7
.fill x, 0x0, f32, 256, 1.0
.dsd vx, mem, f32, base=x, len=256
.dsd in, fabin, f32, color=2, len=256
.dsd out, fabout, f32, color=1, len=256
.task main, 0
.entry main
main:
  fadd.f32 out, in, vx
  ret
.pe 3, 0..7
.fill x, 0x0, f32, 256, 1.0
.dsd vx, mem, f32, base=x, len=256
.dsd in, fabin, f32, color=1, len=256
.dsd out, fabout, f32, color=2, len=256
.task main, 0
.entry main
main:
  fadd.f32 out, in, vx
  ret
.pe 4, 0..1
.fill x, 0x0, f32, 256, 1.0
.dsd vx, mem, f32, base=x, len=256
.dsd in, fabin, f32, color=2, len=256
.dsd out, fabout, f32, color=1, len=256
.task main, 0
.entry main
main:
  fadd.f32 out, in, vx
  ret
.pe 4, 2..3
.fill x, 0x0, f32, 256, 1.0
.dsd vx, mem, f32, base=x, len=256
.dsd e, mem, f32, base=0x400, len=48
.dsd x48, mem, f32, base=x, len=48
.dsd in, fabin, f32, color=2, len=256
.dsd out, fabout, f32, color=1, len=256
.task main, 0
.entry main
main:
  fexp.f32 e, x48
  fadd.f32 out, in, vx
  ret
.pe 4, 4..7
.fill x, 0x0, f32, 256, 1.0
.dsd vx, mem, f32, base=x, len=256
.dsd in, fabin, f32, color=2, len=256
.dsd out, fabout, f32, color=1, len=256
.task main, 0
.entry main
main:
  fadd.f32 out, in, vx
  ret
.pe 5, 0..7
.fill x, 0x0, f32, 256, 1.0
.dsd vx, mem, f32, base=x, len=256
.dsd in, fabin, f32, color=1, len=256
.dsd out, fabout, f32, color=2, len=256
.task main, 0
.entry main
main:
  fadd.f32 out, in, vx
  ret
.pe 6, 0..7
.fill x, 0x0, f32, 256, 1.0
.dsd vx, mem, f32, base=x, len=256
.dsd in, fabin, f32, color=2, len=256
.dsd out, fabout, f32, color=1, len=256
.task main, 0
.entry main
main:
  fadd.f32 out, in, vx
  ret
.pe 7, 0..7
.fill x, 0x0, f32, 256, 1.0
.dsd vx, mem, f32, base=x, len=256
.dsd vy, mem, f32, base=0x400, len=256
.dsd in, fabin, f32, color=1, len=256
.task main, 0
.entry main
main:
  fadd.f32 vy, in, vx
  ret
