// SPDX-License-Identifier: MIT
// test_jit_node: three nested JS functions, CPU-bound for argv[2] s.
function leaf(n) {
  let s = 0;
  for (let i = 0; i < n; i++) s = (s * 31 + i) % 1000003;
  return s;
}
function middle(n) {
  return leaf(n) + 1;
}
function top(seconds) {
  const end = Date.now() + seconds * 1000;
  let x = 0;
  while (Date.now() < end) x += middle(2000);
  return x;
}
top(Number(process.argv[2] || 2));
