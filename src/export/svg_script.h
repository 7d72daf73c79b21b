/* SPDX-License-Identifier: MIT */
/* Exporters: the CSS and JavaScript embedded in every SVG flame graph. */
#ifndef SP_EXPORT_SVG_SCRIPT_H
#define SP_EXPORT_SVG_SCRIPT_H

/*
 * Kept out of svg.c so the C reads as C. Everything is inline: the SVG
 * works offline and from a file:// URL. The script reads its geometry from
 * data-* attributes on the <svg> element and each frame's sample range from
 * data-x / data-w / data-d on its <g>, so zooming is exact (integer sample
 * units) and needs no other state from the generator. Frame names are
 * taken from the <title> (text before the last " ("). The script must
 * never contain the CDATA terminator.
 */

#define SP__SVG_STYLE                                                          \
	"<style type=\"text/css\">\n"                                          \
	"text{font-family:Verdana,sans-serif;font-size:12px;fill:#000}\n"      \
	"#title{font-size:17px}\n"                                             \
	".btn{cursor:pointer;fill:#36c}\n"                                     \
	".hidden{display:none}\n"                                              \
	".f:hover rect{stroke:#000;stroke-width:0.5;cursor:pointer}\n"         \
	".f text{pointer-events:none}\n"                                       \
	".t rect{stroke:#555;stroke-dasharray:2,2}\n"                          \
	".p{opacity:0.5}\n"                                                    \
	"</style>\n"

/* Written line by line: C compilers need not accept longer literals. */
static const char *const sp__svg_script[] = {
	"<script type=\"text/ecmascript\"><![CDATA[\n",
	"'use strict';\n",
	"var svg, frames, details, matched, resetBtn, total, pw, pad;\n",
	"function num(e, n) { return +e.getAttribute(n); }\n",
	"function nameOf(g) {\n",
	"  var t = g.getElementsByTagName('title')[0].textContent;\n",
	"  var i = t.lastIndexOf(' (');\n",
	"  return i < 0 ? t : t.substring(0, i);\n",
	"}\n",
	"function fit(g) {\n",
	"  var r = g.getElementsByTagName('rect')[0];\n",
	"  var t = g.getElementsByTagName('text')[0];\n",
	"  var w = num(r, 'width'), name = Array.from(nameOf(g));\n",
	"  var n = Math.floor((w - 6) / 7.2);\n",
	"  t.setAttribute('x', num(r, 'x') + 3);\n",
	"  if (n < 3) t.textContent = '';\n",
	"  else if (name.length > n)\n",
	"    t.textContent = name.slice(0, n - 2).join('') + '..';\n",
	"  else t.textContent = name.join('');\n",
	"}\n",
	"function place(g, x, w) {\n",
	"  var r = g.getElementsByTagName('rect')[0];\n",
	"  r.setAttribute('x', x.toFixed(2));\n",
	"  r.setAttribute('width', w.toFixed(2));\n",
	"  fit(g);\n",
	"}\n",
	"function zoom(node) {\n",
	"  var zx = num(node, 'data-x'), zw = num(node, 'data-w');\n",
	"  var zd = num(node, 'data-d'), s = pw / zw;\n",
	"  for (var i = 0; i < frames.length; i++) {\n",
	"    var g = frames[i], x = num(g, 'data-x'), w = num(g, 'data-w');\n",
	"    var d = num(g, 'data-d'), vis;\n",
	"    g.classList.remove('p');\n",
	"    if (d < zd) {\n",
	"      vis = x <= zx && x + w >= zx + zw;\n",
	"      if (vis) { g.classList.add('p'); place(g, pad, pw); }\n",
	"    } else {\n",
	"      vis = x >= zx && x + w <= zx + zw;\n",
	"      if (vis) place(g, pad + (x - zx) * s, w * s);\n",
	"    }\n",
	"    g.style.display = vis ? '' : 'none';\n",
	"  }\n",
	"  resetBtn.classList.remove('hidden');\n",
	"}\n",
	"function unzoom() {\n",
	"  var s = pw / total;\n",
	"  for (var i = 0; i < frames.length; i++) {\n",
	"    var g = frames[i];\n",
	"    g.classList.remove('p');\n",
	"    g.style.display = '';\n",
	"    place(g, pad + num(g, 'data-x') * s, num(g, 'data-w') * s);\n",
	"  }\n",
	"  resetBtn.classList.add('hidden');\n",
	"}\n",
	"function clearSearch() {\n",
	"  for (var i = 0; i < frames.length; i++) {\n",
	"    var r = frames[i].getElementsByTagName('rect')[0];\n",
	"    if (r.hasAttribute('data-c')) {\n",
	"      r.setAttribute('fill', r.getAttribute('data-c'));\n",
	"      r.removeAttribute('data-c');\n",
	"    }\n",
	"  }\n",
	"  matched.textContent = ' ';\n",
	"}\n",
	"function search() {\n",
	"  var term = window.prompt('Search (regular expression):', '');\n",
	"  if (term === null) return;\n",
	"  clearSearch();\n",
	"  if (term === '') return;\n",
	"  var re, spans = [], i;\n",
	"  try { re = new RegExp(term); } catch (e) {\n",
	"    matched.textContent = 'Bad expression'; return; }\n",
	"  for (i = 0; i < frames.length; i++) {\n",
	"    var g = frames[i], r = g.getElementsByTagName('rect')[0];\n",
	"    if (!re.test(nameOf(g))) continue;\n",
	"    r.setAttribute('data-c', r.getAttribute('fill'));\n",
	"    r.setAttribute('fill', 'rgb(230,0,230)');\n",
	"    spans.push([num(g, 'data-x'), num(g, 'data-w')]);\n",
	"  }\n",
	"  spans.sort(function (a, b) { return a[0] - b[0] || b[1] - a[1]; });\n",
	"  var sum = 0, end = -1;\n",
	"  for (i = 0; i < spans.length; i++) {\n",
	"    var a = spans[i][0], b = a + spans[i][1];\n",
	"    if (b <= end) continue;\n",
	"    sum += b - Math.max(a, end); end = b;\n",
	"  }\n",
	"  matched.textContent = 'Matched: ' +\n",
	"    (total ? 100 * sum / total : 0).toFixed(2) + '%';\n",
	"}\n",
	"function frameOf(e) {\n",
	"  var n = e.target;\n",
	"  while (n && n !== svg) {\n",
	"    if (n.classList && n.classList.contains('f')) return n;\n",
	"    n = n.parentNode;\n",
	"  }\n",
	"  return null;\n",
	"}\n",
	"function init() {\n",
	"  svg = document.documentElement;\n",
	"  frames = document.querySelectorAll('g.f');\n",
	"  details = document.getElementById('details');\n",
	"  matched = document.getElementById('matched');\n",
	"  resetBtn = document.getElementById('reset');\n",
	"  total = num(svg, 'data-total');\n",
	"  pw = num(svg, 'data-pw'); pad = num(svg, 'data-pad');\n",
	"  svg.addEventListener('click', function (e) {\n",
	"    var g = frameOf(e); if (g) zoom(g); });\n",
	"  svg.addEventListener('mouseover', function (e) {\n",
	"    var g = frameOf(e); if (g) details.textContent =\n",
	"      g.getElementsByTagName('title')[0].textContent; });\n",
	"  svg.addEventListener('mouseout', function () {\n",
	"    details.textContent = ' '; });\n",
	"  document.getElementById('search').addEventListener('click',\n",
	"    function (e) { e.stopPropagation(); search(); });\n",
	"  resetBtn.addEventListener('click',\n",
	"    function (e) { e.stopPropagation(); unzoom(); });\n",
	"  window.addEventListener('keydown', function (e) {\n",
	"    if ((e.ctrlKey || e.metaKey) && e.key === 'f') {\n",
	"      e.preventDefault(); search(); }\n",
	"    else if (e.key === 'Escape') { clearSearch(); unzoom(); } });\n",
	"}\n",
	"window.addEventListener('load', init);\n",
	"]]></script>\n",
};

#endif /* SP_EXPORT_SVG_SCRIPT_H */
