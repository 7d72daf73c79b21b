// SPDX-License-Identifier: MIT
// CPU-bound nested JavaScript functions for the runtime tests (issue 12):
//   node --perf-basic-prof --interpreted-frames-native-stack js_nested.js SECONDS
// jsMain -> jsOuter -> jsMiddle -> jsLeaf spin for SECONDS of CPU time.
'use strict';
const end = 1e6 * Number(process.argv[2] || 2);
const cpu = () => process.cpuUsage().user + process.cpuUsage().system;

function jsLeaf(n) {
  let s = 0;
  for (let i = 0; i < n; i++) s = (s * 31 + i) % 1000003;
  return s;
}
function jsMiddle(n) { return jsLeaf(n) + 1; }
function jsOuter(n) {
  let t = 0;
  while (cpu() < end) t += jsMiddle(n);
  return t;
}
function jsMain() { return jsOuter(200000); }
console.log(jsMain() > 0 ? 'ok' : 'odd');
