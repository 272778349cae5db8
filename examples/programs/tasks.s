; Tasks and microthreads on one PE: main starts two asynchronous copies on microthreads;
; each activates a task when it completes; the last one reduces the result.
;   wafersim exec tiny --program examples/programs/tasks.s --dump 0,0:0x800:1:f32
.pe 0, 0
.fill a, 0x000, f32, 128, 0.5
.dsd src, mem, f32, base=a, len=128
.dsd d1, mem, f32, base=0x208, len=128
.dsd d2, mem, f32, base=0x410, len=128
.task main, 0
.task first, 1
.task second, 2
.entry main
main:
  block second                            ; second may only run after first
  fmov.f32 d1, src, async, activate=first
  fmov.f32 d2, src, async, activate=second
  ret
first:
  unblock second
  ret
second:
  mov r5, 0
  fsum.f32 r5, d1                         ; 128 x 0.5 = 64
  fsum.f32 r5, d2                         ; + 64
  st [0x800], r5
  ret
