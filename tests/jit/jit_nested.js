// SPDX-License-Identifier: MIT
// test_jit_node: three nested JS functions, for argv[2] s of the process's
// CPU time (not wall time: a loaded machine would leave node's start-up
// most of the samples).
function leaf(n) {
  let s = 0;
  for (let i = 0; i < n; i++) s = (s * 31 + i) % 1000003;
  return s;
}
function middle(n) {
  return leaf(n) + 1;
}
function top(seconds) {
  const cpu = () => {
    const u = process.cpuUsage();
    return (u.user + u.system) / 1e6;
  };
  const end = cpu() + seconds;
  let x = 0;
  while (cpu() < end) x += middle(2000);
  return x;
}
top(Number(process.argv[2] || 2));
