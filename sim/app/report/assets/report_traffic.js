// The headline of a synthetic-traffic run (traffic.json), placed right after the summary
// cards: offered and accepted load against the bound, whether the measured packets drained,
// and the latency distribution as a CDF.
(function () {
  var D = JSON.parse(document.getElementById('report-data').textContent);
  var T = D.traffic;
  if (!T) return;
  var NS = 'http://www.w3.org/2000/svg';
  function node(ns, tag, attrs, text) {
    var e = ns ? document.createElementNS(ns, tag) : document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function fixed(v, d) { return v === null || v === undefined || !isFinite(v) ? '–' : Number(v).toFixed(d); }

  var box = node(null, 'section', { id: 'traffic' });
  box.appendChild(node(null, 'h2', {}, 'Traffic: ' + T.pattern + (T.pattern === 'replay' ? '' : ' at rate ' + T.rate)));
  var verdict = T.drained
    ? 'Drained: every one of the ' + T.packets.toLocaleString('en-US') + ' measured packets was delivered.'
    : 'Saturated: ' + T.undelivered.toLocaleString('en-US') + ' measured packets were still undelivered at the drain limit; the offered load is beyond what the fabric accepts.';
  box.appendChild(node(null, 'p', { id: 'traffic-verdict', class: T.drained ? 'note' : 'absent' }, verdict));
  var t = node(null, 'table', { id: 'traffic-load' });
  [['offered', fixed(T.offered, 4) + ' wavelets/node/cycle'],
   ['accepted', fixed(T.accepted, 4) + ' wavelets/node/cycle' + (T.bound ? ' (bound ' + fixed(T.bound, 4) + ', ' + fixed(100 * T.accepted / T.bound, 1) + '% of it)' : '')],
   ['latency', 'avg ' + fixed(T.latency.avg, 1) + ', p50 ' + T.latency.p50 + ', p99 ' + T.latency.p99 + ', max ' + T.latency.max + ' cycles']
  ].forEach(function (r) {
    var tr = node(null, 'tr');
    tr.appendChild(node(null, 'th', { class: 'l' }, r[0]));
    tr.appendChild(node(null, 'td', { class: 'l' }, r[1]));
    t.appendChild(tr);
  });
  box.appendChild(t);

  var cdf = T.latency.cdf || [];
  if (cdf.length) {
    var W = 560, H = 220, L = 48, R = 12, TOP = 10, B = 34;
    var xmax = Math.max(1, cdf[cdf.length - 1][0]);
    var log = xmax > 100 * Math.max(1, cdf[0][0]);
    var xOf = function (c) {
      var f = log ? Math.log10(1 + c) / Math.log10(1 + xmax) : c / xmax;
      return L + f * (W - L - R);
    };
    var yOf = function (q) { return TOP + (1 - q) * (H - TOP - B); };
    var svg = node(NS, 'svg', { id: 'traffic-cdf', width: W, height: H, viewBox: '0 0 ' + W + ' ' + H });
    svg.appendChild(node(NS, 'line', { x1: L, y1: yOf(0), x2: W - R, y2: yOf(0), stroke: '#888' }));
    svg.appendChild(node(NS, 'line', { x1: L, y1: yOf(0), x2: L, y2: yOf(1), stroke: '#888' }));
    var points = [[xOf(cdf[0][0]), yOf(0)]];
    var prev = 0;
    cdf.forEach(function (p) { points.push([xOf(p[0]), yOf(prev)]); points.push([xOf(p[0]), yOf(p[1])]); prev = p[1]; });
    svg.appendChild(node(NS, 'polyline', { points: points.map(function (p) { return p[0].toFixed(1) + ',' + p[1].toFixed(1); }).join(' '),
                                           fill: 'none', stroke: '#1f77b4', 'stroke-width': 2 }));
    [0, 0.5, 0.99].forEach(function (q) {
      svg.appendChild(node(NS, 'text', { x: L - 6, y: yOf(q) + 4, 'font-size': 10, 'text-anchor': 'end' }, q === 0.99 ? '0.99' : String(q)));
    });
    svg.appendChild(node(NS, 'text', { x: L, y: H - 8, 'font-size': 10 }, String(cdf[0][0])));
    svg.appendChild(node(NS, 'text', { x: W - R, y: H - 8, 'font-size': 10, 'text-anchor': 'end' }, String(xmax) + ' cycles'));
    svg.appendChild(node(NS, 'text', { x: (L + W - R) / 2, y: H - 8, 'font-size': 10, 'text-anchor': 'middle' },
                         'packet latency' + (log ? ' (log scale)' : '') + ': fraction delivered within'));
    var fig = node(null, 'figure', { class: 'panel' });
    fig.appendChild(node(null, 'figcaption', {}, 'Latency CDF of the measured packets'));
    fig.appendChild(svg);
    box.appendChild(fig);
  }
  var cards = document.querySelector('#report .cards');
  var root = document.getElementById('report');
  if (cards && cards.nextSibling) root.insertBefore(box, cards.nextSibling);
  else root.appendChild(box);
})();
