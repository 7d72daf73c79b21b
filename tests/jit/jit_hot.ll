; SPDX-License-Identifier: MIT
; test_jit_lli: main -> middle -> leaf (a hot loop), JIT-compiled by
; lli -jit-kind=mcjit; runs up to 30 s (the test attaches, records and
; kills it).
declare i64 @time(i64*)

define i64 @leaf(i64 %n) noinline {
entry:
  br label %loop
loop:
  %i = phi i64 [0, %entry], [%i1, %loop]
  %s = phi i64 [0, %entry], [%s2, %loop]
  %m = mul i64 %s, 31
  %a = add i64 %m, %i
  %s2 = urem i64 %a, 1000003
  %i1 = add i64 %i, 1
  %c = icmp ult i64 %i1, %n
  br i1 %c, label %loop, label %done
done:
  ret i64 %s2
}

define i64 @middle(i64 %n) noinline {
  %r = call i64 @leaf(i64 %n)
  %r1 = add i64 %r, 1
  ret i64 %r1
}

define i32 @main() {
entry:
  %t0 = call i64 @time(i64* null)
  br label %loop
loop:
  %acc = phi i64 [0, %entry], [%acc1, %loop]
  %r = call i64 @middle(i64 200000)
  %acc1 = add i64 %acc, %r
  %now = call i64 @time(i64* null)
  %d = sub i64 %now, %t0
  %c = icmp slt i64 %d, 30
  br i1 %c, label %loop, label %done
done:
  %t = trunc i64 %acc1 to i32
  %z = and i32 %t, 0
  ret i32 %z
}
