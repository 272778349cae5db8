// The root causes of each wafer's credit stalls (report/root_causes.h), placed before its
// hotspot table: the sinks the stalls back up from, and the outputs behind each.
(function () {
  var D = JSON.parse(document.getElementById('report-data').textContent);
  var DIRS = ['north', 'east', 'south', 'west', 'ramp'];
  function node(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function where(r) {
    return r.x1 === undefined || (r.x0 === r.x1 && r.y0 === r.y1) ? '(' + r.x0 + ', ' + r.y0 + ')'
                                                                   : '(' + r.x0 + ', ' + r.y0 + ')–(' + r.x1 + ', ' + r.y1 + ')';
  }
  function sinkText(c) {
    if (c.kind === 'ejection') return 'ejection at ' + where(c) + ' (its ramp towards the core)';
    if (c.kind === 'edge') return 'the wafer edge at ' + where(c) + ', ' + DIRS[c.dir];
    return 'link ' + where(c) + ' ' + DIRS[c.dir];
  }
  (D.fabric || []).forEach(function (f) {
    var causes = f.root_causes || [];
    var anchor = document.getElementById('hotspots-w' + f.wafer);
    if (!causes.length || !anchor) return;
    var box = node('div', { id: 'causes-w' + f.wafer });
    box.appendChild(node('h3', {}, 'Root causes of the credit stalls' + (D.fabric.length > 1 ? ' (wafer ' + f.wafer + ')' : '')));
    box.appendChild(node('p', { class: 'note' }, 'Each stalled output followed downstream, region by region, along the ' +
      'most-stalled onward output, to what does not stall but is full: an ejection, a link, or the wafer edge. ' +
      'Stalls behind: the credit-stall cycles of every output that leads there.'));
    var t = node('table', { class: 'causes' });
    var head = node('tr');
    ['#', 'saturated sink', 'utilization', 'stall cycles behind', 'share', 'outputs behind it (most stalled first)'].forEach(function (h, i) {
      head.appendChild(node('th', { class: i === 1 || i === 5 ? 'l' : null }, h));
    });
    t.appendChild(head);
    causes.forEach(function (c, i) {
      var tr = node('tr', { 'data-kind': c.kind, 'data-x': c.x0, 'data-y': c.y0, 'data-dir': DIRS[c.dir] });
      tr.appendChild(node('td', {}, String(i + 1)));
      tr.appendChild(node('td', { class: 'l' }, sinkText(c)));
      tr.appendChild(node('td', {}, (100 * c.utilization).toFixed(1) + '%'));
      tr.appendChild(node('td', {}, c.stalled.toLocaleString('en-US')));
      tr.appendChild(node('td', {}, (100 * c.share).toFixed(1) + '%'));
      var tree = node('details');
      tree.appendChild(node('summary', {}, c.outputs.length + (c.outputs.length === 12 ? '+' : '') + ' outputs'));
      var ul = node('ul');
      c.outputs.forEach(function (o) {
        ul.appendChild(node('li', {}, where(o) + ' ' + DIRS[o.dir] + ': ' + o.stalled.toLocaleString('en-US') +
          ' stall cycles, ' + (o.hops ? o.hops + ' hop' + (o.hops === 1 ? '' : 's') + ' upstream' : 'next to it')));
      });
      tree.appendChild(ul);
      var td = node('td', { class: 'l' });
      td.appendChild(tree);
      tr.appendChild(td);
      t.appendChild(tr);
    });
    box.appendChild(t);
    var holder = anchor.parentNode && anchor.parentNode.tagName === 'DIV' && anchor.parentNode.id !== 'report' ? anchor.parentNode : anchor;
    holder.parentNode.insertBefore(box, holder);
  });
})();
