// wafersim report: draws the run's data (embedded as JSON above) as SVG. No network, no libraries.
(function () {
  'use strict';
  var D = JSON.parse(document.getElementById('report-data').textContent);
  var SVGNS = 'http://www.w3.org/2000/svg';
  var DIRS = ['north', 'east', 'south', 'west', 'ramp'];
  var ACTIVITIES = ['compute', 'stream', 'reduce', 'optimizer'];
  var ACT_COLORS = { compute: '#3b8a5a', stream: '#2f6fd6', reduce: '#d08a24', optimizer: '#9b4fc2', idle: '#c8ccd4' };
  var SERIES_COLORS = ['#2f6fd6', '#d0452f', '#3b8a5a', '#9b4fc2', '#d08a24', '#3aa0b8', '#c2417a', '#7a7f8c'];
  var root = document.getElementById('report');

  // ---- DOM helpers ------------------------------------------------------------------------
  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    setAttrs(e, attrs);
    append(e, children);
    return e;
  }
  function svg(tag, attrs, children) {
    var e = document.createElementNS(SVGNS, tag);
    setAttrs(e, attrs);
    append(e, children);
    return e;
  }
  function setAttrs(e, attrs) {
    if (!attrs) return;
    Object.keys(attrs).forEach(function (k) {
      if (k === 'text') e.textContent = attrs[k];
      else if (k === 'onclick' || k === 'oninput' || k === 'onchange') e[k] = attrs[k];
      else if (attrs[k] !== null && attrs[k] !== undefined) e.setAttribute(k, attrs[k]);
    });
  }
  function append(e, children) {
    if (children === null || children === undefined) return;
    if (!Array.isArray(children)) children = [children];
    children.forEach(function (c) {
      if (c === null || c === undefined) return;
      e.appendChild(typeof c === 'string' ? document.createTextNode(c) : c);
    });
  }

  // ---- numbers --------------------------------------------------------------------------
  function num(v, digits) {
    if (v === null || v === undefined || !isFinite(v)) return '–';
    var a = Math.abs(v);
    if (a !== 0 && (a >= 1e6 || a < 1e-3)) return v.toExponential(2);
    if (Number.isInteger(v)) return v.toLocaleString('en-US');
    return v.toFixed(digits === undefined ? 3 : digits);
  }
  // 1234567 -> "1.23M": axis labels
  function si(v) {
    var a = Math.abs(v);
    if (a >= 1e9) return +(v / 1e9).toPrecision(3) + 'G';
    if (a >= 1e6) return +(v / 1e6).toPrecision(3) + 'M';
    if (a >= 1e4) return +(v / 1e3).toPrecision(3) + 'k';
    return num(v, 2);
  }
  function pct(v) { return isFinite(v) ? (100 * v).toFixed(1) + '%' : '–'; }
  function seconds(s) {
    if (!isFinite(s)) return '–';
    var units = [[1, 's'], [1e-3, 'ms'], [1e-6, 'µs'], [1e-9, 'ns']];
    for (var i = 0; i < units.length; i++) if (Math.abs(s) >= units[i][0]) return (s / units[i][0]).toFixed(3) + ' ' + units[i][1];
    return (s / 1e-12).toFixed(0) + ' ps';
  }
  function bytes(b) {
    var u = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
    var i = 0;
    while (b >= 1024 && i < u.length - 1) { b /= 1024; i++; }
    return (i ? b.toFixed(1) : b) + ' ' + u[i];
  }

  // ---- color scale (a perceptual dark-blue to yellow ramp) --------------------------------
  var STOPS = [[0, [247, 248, 250]], [0.001, [68, 1, 84]], [0.25, [59, 82, 139]], [0.5, [33, 145, 140]],
               [0.75, [94, 201, 98]], [1, [253, 231, 37]]];
  function colorAt(t) {
    if (!(t > 0)) return 'rgb(247,248,250)';
    if (t > 1) t = 1;
    for (var i = 1; i < STOPS.length; i++) {
      if (t <= STOPS[i][0]) {
        var a = STOPS[i - 1], b = STOPS[i], f = (t - a[0]) / (b[0] - a[0]);
        return 'rgb(' + [0, 1, 2].map(function (k) { return Math.round(a[1][k] + f * (b[1][k] - a[1][k])); }).join(',') + ')';
      }
    }
    return 'rgb(253,231,37)';
  }

  // ---- SVG export -----------------------------------------------------------------------
  function svgText(node) {
    var clone = node.cloneNode(true);
    clone.setAttribute('xmlns', SVGNS);
    clone.setAttribute('font-family', 'Helvetica, Arial, sans-serif');
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + new XMLSerializer().serializeToString(clone);
  }
  function download(name, text) {
    var url = URL.createObjectURL(new Blob([text], { type: 'image/svg+xml' }));
    var a = el('a', { href: url, download: name });
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(function () { URL.revokeObjectURL(url); }, 1000);
  }
  function exportButton(getSvg, name) {
    return el('button', { type: 'button', title: 'download this chart as an SVG file', text: 'SVG',
                          onclick: function () { download(name, svgText(getSvg())); } });
  }

  // ---- header ---------------------------------------------------------------------------
  var trace = D.trace;
  var clock = trace.clock_hz;
  function cyclesText(c) { return num(c) + ' cycles (' + seconds(c / clock) + ')'; }
  root.appendChild(el('h1', { text: 'wafersim report — ' + (D.run.platform || 'run') }));
  root.appendChild(el('p', { class: 'sub mono', text: D.run.command_line || D.run.folder }));
  var cards = el('div', { class: 'cards' });
  function card(k, v) { cards.appendChild(el('div', { class: 'card' }, [el('div', { class: 'k', text: k }), el('div', { class: 'v', text: v })])); }
  card('simulated', cyclesText(trace.end_cycle));
  card('windows', trace.windows + ' × ' + num(trace.window_cycles) + ' cycles');
  if (D.fabric.length) {
    var f0 = D.fabric[0];
    card('fabric', f0.width + ' × ' + f0.height + ' routers, ' + f0.colors + ' colors');
    card('regions', f0.cols + ' × ' + f0.rows + ' of ' + f0.region_size + ' × ' + f0.region_size + ' routers');
    card('wavelets forwarded', num(f0.totals.forwarded));
    card('throughput', num(f0.totals.forwarded / Math.max(1, trace.end_cycle), 2) + ' wavelets/cycle');
    card('credit stalls', num(f0.totals.stalled));
    if (f0.pe) {
      card('PE cores', num(f0.pe.pes_loaded) + ' with a program');
      card('PE busy', pct(f0.pe.totals.busy / (Math.max(1, f0.pe.pes_loaded) * Math.max(1, trace.end_cycle))) + ' of their cycles');
      card('FLOP', num(f0.pe.totals.flops));
    }
  }
  card('status', D.run.status || '–');
  root.appendChild(cards);
  var statsNote = el('p', { class: 'note' });
  D.fabric.forEach(function (f) {
    var s = null;
    Object.keys(D.stats).forEach(function (k) { if (k === 'wafer' + f.wafer || k.endsWith('.wafer' + f.wafer)) s = D.stats[k]; });
    if (!s) return;
    var same = s.wavelets_forwarded === f.totals.forwarded && s.credit_stalls === f.totals.stalled &&
               s.occupancy_integral === f.totals.occupancy;
    var whole = f.area[0] === 0 && f.area[1] === 0 && f.area[2] === f.width - 1 && f.area[3] === f.height - 1;
    statsNote.appendChild(document.createTextNode('wafer ' + f.wafer + ': the windows add up to ' + num(f.totals.forwarded) +
      ' wavelets forwarded, ' + num(f.totals.stalled) + ' stall cycles and ' + num(f.totals.occupancy) + ' wavelet-cycles queued' +
      (whole ? (same ? ' — exactly the run\'s statistics. ' : ' — the statistics say ' + num(s.wavelets_forwarded) + ', ' +
      num(s.credit_stalls) + ', ' + num(s.occupancy_integral) + '. ') : ' (the traced region only). ')));
  });
  root.appendChild(statsNote);

  // ---- fabric heatmaps -------------------------------------------------------------------
  function Heatmap(f, title, what, valueOf, id) {
    var cellPx = Math.max(3, Math.min(34, Math.floor(300 / Math.max(f.cols, f.rows))));
    var w = f.cols * cellPx, h = f.rows * cellPx, pad = 22, legendH = 34;
    var node = svg('svg', { class: 'heatmap', id: id, width: w + pad + 4, height: h + pad + legendH,
                            viewBox: '0 0 ' + (w + pad + 4) + ' ' + (h + pad + legendH), 'data-title': title });
    var g = svg('g', { transform: 'translate(' + pad + ',' + (pad - 6) + ')' });
    node.appendChild(g);
    var rects = [];
    for (var i = 0; i < f.cols * f.rows; i++) {
      var cx = i % f.cols, cy = Math.floor(i / f.cols);
      var r = svg('rect', { class: 'cell', x: cx * cellPx, y: cy * cellPx, width: cellPx, height: cellPx,
                            stroke: cellPx >= 8 ? '#ffffff' : null, 'stroke-width': cellPx >= 8 ? 0.5 : null });
      r.appendChild(svg('title'));
      g.appendChild(r);
      rects.push(r);
    }
    // axes: x (columns) along the top, y (rows) down the left, in router coordinates
    var ticks = function (n, along) {
      var step = Math.max(1, Math.ceil(n / 6));
      for (var k = 0; k < n; k += step) {
        var coord = (along === 'x' ? f.area[0] : f.area[1]) + k * f.region_size;
        if (along === 'x') node.appendChild(svg('text', { x: pad + k * cellPx + cellPx / 2, y: 11, 'font-size': 9, 'text-anchor': 'middle', text: coord }));
        else node.appendChild(svg('text', { x: pad - 3, y: pad - 6 + k * cellPx + cellPx / 2 + 3, 'font-size': 9, 'text-anchor': 'end', text: coord }));
      }
    };
    ticks(f.cols, 'x');
    ticks(f.rows, 'y');
    var grad = 'grad-' + id;
    var defs = svg('defs', null, svg('linearGradient', { id: grad, x1: '0', x2: '1', y1: '0', y2: '0' },
      [0, 0.25, 0.5, 0.75, 1].map(function (t) { return svg('stop', { offset: t, 'stop-color': colorAt(Math.max(t, 0.0011)) }); })));
    node.appendChild(defs);
    var ly = pad - 6 + h + 8;
    node.appendChild(svg('rect', { x: pad, y: ly, width: Math.max(60, w), height: 8, fill: 'url(#' + grad + ')' }));
    var lo = svg('text', { x: pad, y: ly + 20, 'font-size': 9, text: '0' });
    var hi = svg('text', { x: pad + Math.max(60, w), y: ly + 20, 'font-size': 9, 'text-anchor': 'end' });
    node.appendChild(lo);
    node.appendChild(hi);
    var framesMax = 0;
    for (var fr = 0; fr < f.frames.length; fr++)
      for (var c = 0; c < rects.length; c++) framesMax = Math.max(framesMax, valueOf(f.frames[fr], c));
    // a frame is drawn on the scale of all frames (so frames compare); the whole run on its own
    this.update = function (frame, whole) {
      var max = framesMax;
      if (whole) {
        max = 0;
        for (var c = 0; c < rects.length; c++) max = Math.max(max, valueOf(frame, c));
      }
      for (var c = 0; c < rects.length; c++) {
        var v = valueOf(frame, c);
        rects[c].setAttribute('fill', colorAt(max > 0 ? v / max : 0));
        var cx = c % f.cols, cy = Math.floor(c / f.cols);
        var x0 = f.area[0] + cx * f.region_size, y0 = f.area[1] + cy * f.region_size;
        var where = f.region_size === 1 ? '(' + x0 + ', ' + y0 + ')' :
          '(' + x0 + ', ' + y0 + ')–(' + Math.min(f.area[2], x0 + f.region_size - 1) + ', ' + Math.min(f.area[3], y0 + f.region_size - 1) + ')';
        rects[c].firstChild.textContent = where + ': ' + num(v);
      }
      hi.textContent = num(max);
    };
    this.figure = el('figure', { class: 'panel' }, [
      el('figcaption', null, [el('div', null, [el('h3', { text: title }), el('div', { class: 'what', text: what })]),
                              exportButton(function () { return node; }, id + '.svg')]),
      node]);
  }
  function absentPanel(title, reason) {
    return el('figure', { class: 'panel absent-panel' }, [
      el('figcaption', null, el('h3', { text: title })),
      el('p', { class: 'absent', text: 'Not recorded: ' + reason + '.' })]);
  }

  // Sums of frames (the whole run is one more "frame").
  function wholeRun(f) {
    var cells = f.cols * f.rows;
    var t = { start: 0, end: trace.end_cycle, fwd: DIRS.map(function () { return new Array(cells).fill(0); }),
              stall: new Array(cells).fill(0), occ: new Array(cells).fill(0) };
    if (f.pe) ['busy', 'pe_stall', 'sram_access', 'sram_in_use'].forEach(function (k) { t[k] = new Array(cells).fill(0); });
    if (f.energy) t.energy = new Array(cells).fill(0);
    f.frames.forEach(function (fr) {
      for (var c = 0; c < cells; c++) {
        if (f.energy) t.energy[c] += fr.energy[c];
        for (var d = 0; d < DIRS.length; d++) t.fwd[d][c] += fr.fwd[d][c];
        t.stall[c] += fr.stall[c];
        t.occ[c] += fr.occ[c];
        if (f.pe) {
          t.busy[c] += fr.busy[c];
          t.pe_stall[c] += fr.pe_stall[c];
          t.sram_access[c] += fr.sram_access[c];
          t.sram_in_use[c] = Math.max(t.sram_in_use[c], fr.sram_in_use[c]);
        }
      }
    });
    return t;
  }

  var heatmapIds = 0;
  function fabricSection(f) {
    var box = el('div', { class: 'fabric', 'data-wafer': f.wafer });
    var cells = f.cols * f.rows;
    var all = wholeRun(f);
    var frames = f.frames.concat([all]);
    var cyc = function (fr) { return Math.max(1, fr.end - fr.start); };
    var maps = [];
    DIRS.forEach(function (dname, d) {
      maps.push(new Heatmap(f, 'Link utilization — ' + dname, 'wavelets per link per cycle (output towards ' + dname + ')',
        function (fr, c) { var l = f.links[c][d]; return l ? fr.fwd[d][c] / (l * cyc(fr)) : 0; }, 'util-' + dname + '-w' + f.wafer + '-' + (heatmapIds++)));
    });
    maps.push(new Heatmap(f, 'Credit stalls', 'stalled output-color-cycles per router per cycle',
      function (fr, c) { return fr.stall[c] / (f.routers[c] * cyc(fr)); }, 'stalls-w' + f.wafer + '-' + (heatmapIds++)));
    maps.push(new Heatmap(f, 'Queue occupancy', 'mean wavelets queued per router',
      function (fr, c) { return fr.occ[c] / (f.routers[c] * cyc(fr)); }, 'occupancy-w' + f.wafer + '-' + (heatmapIds++)));

    var label = el('span', { class: 'frame-label' });
    var slider = el('input', { type: 'range', min: 0, max: frames.length - 1, value: frames.length - 1, step: 1,
                               'aria-label': 'window' });
    var current = frames.length - 1;
    var chart = null;
    function show(i) {
      current = i;
      var fr = frames[i];
      maps.forEach(function (m) { m.update(fr, i === frames.length - 1); });
      label.textContent = (i === frames.length - 1 ? 'whole run: ' : 'frame ' + (i + 1) + ' of ' + f.frames.length + ': ') +
        'cycles ' + num(fr.start) + ' – ' + num(fr.end);
      if (chart) chart.mark(i === frames.length - 1 ? null : fr);
    }
    slider.oninput = function () { show(Number(slider.value)); };
    var timer = null;
    var play = el('button', { type: 'button', text: '▶ play', onclick: function () {
      if (timer) { clearInterval(timer); timer = null; play.textContent = '▶ play'; return; }
      play.textContent = '■ stop';
      var i = -1;
      timer = setInterval(function () {
        i = (i + 1) % f.frames.length;
        slider.value = i;
        show(i);
      }, 350);
    } });
    var whole = el('button', { type: 'button', text: 'whole run', onclick: function () { slider.value = frames.length - 1; show(frames.length - 1); } });
    box.appendChild(el('div', { class: 'controls' }, [el('label', null, ['window', slider]), play, whole, label]));
    var framesNote = trace.windows > f.frames.length ?
      ' Each frame merges ' + Math.ceil(trace.windows / f.frames.length) + ' windows.' : '';
    box.appendChild(el('p', { class: 'note', text: 'Regions of ' + f.region_size + ' × ' + f.region_size + ' routers' +
      (f.region_size > 1 ? ' (values per region are per router and link within it)' : '') + '; north is up, x grows east. ' +
      'Colors: a frame on the scale of the largest value over all frames of its map; the whole run on its own.' + framesNote }));
    if (f.pe) {
      var pes = f.pe.pes, cap = f.pe.capacity_bytes, fabricMaps = maps;
      maps = [];
      maps.push(new Heatmap(f, 'PE busy', 'fraction of cycles with a task or vector operation, per PE',
        function (fr, c) { return fr.busy[c] / (pes[c] * cyc(fr)); }, 'pe-busy-w' + f.wafer + '-' + (heatmapIds++)));
      maps.push(new Heatmap(f, 'PE stalls', 'stalled thread-cycles per PE per cycle (all causes)',
        function (fr, c) { return fr.pe_stall[c] / (pes[c] * cyc(fr)); }, 'pe-stalls-w' + f.wafer + '-' + (heatmapIds++)));
      maps.push(new Heatmap(f, 'SRAM in use', 'fraction of the PEs\' SRAM the loaded programs occupy',
        function (fr, c) { return fr.sram_in_use[c] / (pes[c] * cap); }, 'sram-use-w' + f.wafer + '-' + (heatmapIds++)));
      maps.push(new Heatmap(f, 'SRAM accesses', 'port accesses (reads + writes) per PE per cycle',
        function (fr, c) { return fr.sram_access[c] / (pes[c] * cyc(fr)); }, 'sram-access-w' + f.wafer + '-' + (heatmapIds++)));
      maps = maps.concat(fabricMaps);
    }
    if (f.energy) {
      var en = f.energy;
      maps.unshift(new Heatmap(f, 'Power density', 'W/mm² over the region\'s PE tiles: its dynamic energy over the time, plus its leakage',
        function (fr, c) { return (fr.energy[c] * 1e-15 / (cyc(fr) / clock) + en.static_w[c]) / (en.pes[c] * en.tile_area_mm2); },
        'power-density-w' + f.wafer + '-' + (heatmapIds++)));
    }
    var grid = el('div', { class: 'grid' });
    maps.forEach(function (m) { grid.appendChild(m.figure); });
    if (!f.pe) {
      grid.appendChild(absentPanel('PE busy', D.pe.reason || 'not traced'));
      grid.appendChild(absentPanel('SRAM usage', D.sram.reason || 'not traced'));
    }
    box.appendChild(grid);

    box.appendChild(el('h2', { text: 'Fabric throughput over time' + (D.fabric.length > 1 ? ' — wafer ' + f.wafer : '') }));
    // small multiples on one time axis: each quantity on its own scale
    var charts = [
      { id: 'throughput-w' + f.wafer, name: 'wavelets forwarded per cycle', v: f.series.forwarded },
      { id: 'stalls-time-w' + f.wafer, name: 'credit stalls per cycle (output-color-cycles)', v: f.series.stalled },
      { id: 'queued-time-w' + f.wafer, name: 'wavelets queued (mean over the window)', v: f.series.occupancy }
    ].map(function (c, i) {
      var ch = lineChart({ id: c.id, x: windowsX(c.v.length), series: [{ name: c.name, values: perCycle(c.v) }],
                           xlabel: i === 2 ? 'cycle (' + si(clock) + 'Hz clock)' : '', ylabel: '', height: 150, color: i });
      box.appendChild(ch.figure);
      return ch;
    });
    if (f.pe) charts = charts.concat(peSection(f, box));
    if (f.energy) charts = charts.concat(powerSection(f, box));
    chart = { mark: function (fr) { charts.forEach(function (c) { c.mark(fr); }); } };
    box.appendChild(el('h2', { text: 'Hotspots' + (D.fabric.length > 1 ? ' — wafer ' + f.wafer : '') }));
    box.appendChild(hotspotTable(f));
    box.appendChild(el('h2', { text: 'Busiest links' + (D.fabric.length > 1 ? ' — wafer ' + f.wafer : '') }));
    box.appendChild(busiestTable(f));
    show(frames.length - 1);
    return box;
  }
  // PE cores: busy and stalls over time, busy cycles by cause, the busiest regions.
  function peSection(f, box) {
    var p = f.pe, nw = p.series.busy.length, loaded = Math.max(1, p.pes_loaded);
    box.appendChild(el('h2', { text: 'PE cores over time' + (D.fabric.length > 1 ? ' — wafer ' + f.wafer : '') }));
    var busy = lineChart({ id: 'pe-busy-time-w' + f.wafer, x: windowsX(nw), height: 150, color: 3,
      series: [{ name: 'busy PEs (fraction of the ' + num(p.pes_loaded) + ' with a program)',
                 values: perCycle(p.series.busy).map(function (v) { return v / loaded; }) }] });
    var stalls = lineChart({ id: 'pe-stalls-time-w' + f.wafer, x: windowsX(nw), height: 190, xlabel: 'cycle (' + si(clock) + 'Hz clock)',
      series: p.causes.map(function (c, i) { return { name: 'stalled: ' + c.replace('_', ' '), values: perCycle(p.series.stall[i]).map(function (v) { return v / loaded; }) }; })
        .filter(function (s) { return s.values.some(function (v) { return v > 0; }); }) });
    box.appendChild(busy.figure);
    box.appendChild(el('p', { class: 'note', text: 'Stalled thread-cycles per loaded PE per cycle, by cause (a PE stalls in several threads at once: the task and its microthreads).' }));
    box.appendChild(stalls.figure);
    box.appendChild(el('h2', { text: 'PE busy cycles by cause' + (D.fabric.length > 1 ? ' — wafer ' + f.wafer : '') }));
    var tot = p.totals, st = tot.stall.reduce(function (a, b) { return a + b; }, 0);
    var same = p.stats_totals.busy === tot.busy;
    var rows = [['busy', tot.busy, 'cycles with a task running or a vector operation in flight, all PEs']];
    p.causes.forEach(function (c, i) { rows.push(['stalled: ' + c.replace('_', ' '), tot.stall[i], 'thread-cycles']); });
    var t = el('table', { id: 'pe-causes-w' + f.wafer }, el('tr', null, ['', 'cycles', 'share of stalls', ''].map(function (h, i) {
      return el('th', { class: i === 0 || i === 3 ? 'l' : null, text: h }); })));
    rows.forEach(function (r, i) {
      t.appendChild(el('tr', null, [el('td', { class: 'l', text: r[0] }), el('td', { text: num(r[1]) }),
        el('td', { text: i && st ? pct(r[1] / st) : '' }), el('td', { class: 'l note', text: r[2] })]));
    });
    box.appendChild(el('p', { class: 'note', text: num(tot.instructions) + ' instructions and ' + num(tot.flops) + ' FLOP over ' +
      num(p.pes_loaded) + ' PEs with a program; the windows add up to the cores\' statistics' + (same ? ' exactly.' : ' (busy ' + num(p.stats_totals.busy) + ').') }));
    box.appendChild(t);
    box.appendChild(el('h2', { text: 'Busiest PEs' + (D.fabric.length > 1 ? ' — wafer ' + f.wafer : '') }));
    var head = ['#', 'region (x, y)', 'busy', 'FLOP', 'stalled thread-cycles', 'leading stall', 'SRAM in use'];
    var bt = el('table', { class: 'busiest-pes', id: 'busiest-pes-w' + f.wafer }, [
      el('thead', null, el('tr', null, head.map(function (h, i) { return el('th', { class: i < 2 || i === 5 ? 'l' : null, text: h }); })))]);
    var body = el('tbody');
    p.busiest.forEach(function (h, i) {
      var where = h.x0 === h.x1 && h.y0 === h.y1 ? '(' + h.x0 + ', ' + h.y0 + ')' : '(' + h.x0 + ', ' + h.y0 + ')–(' + h.x1 + ', ' + h.y1 + ')';
      body.appendChild(el('tr', { 'data-x': h.x0, 'data-y': h.y0 }, [
        el('td', { class: 'l', text: String(i + 1) }), el('td', { class: 'l mono', text: where }),
        el('td', { text: pct(h.busy_fraction) }), el('td', { text: num(h.flops) }), el('td', { text: num(h.stalled) }),
        el('td', { class: 'l', text: h.lead_cause ? h.lead_cause.replace('_', ' ') + ' (' + pct(h.lead_share) + ')' : '–' }),
        el('td', { text: bytes(h.sram_in_use) })]));
    });
    bt.appendChild(body);
    box.appendChild(el('p', { class: 'note', text: 'Regions by busy cycles over the run; busy: fraction of the region\'s PE-cycles.' }));
    box.appendChild(bt);
    return [busy, stalls];
  }

  // Power over time: each window's dynamic energy by component over its time, and the total
  // with the wafer's leakage.
  function powerSection(f, box) {
    var en = f.energy, nw = en.series.compute.length;
    var leak = en.static_w.reduce(function (a, b) { return a + b; }, 0);
    var watts = function (v) { return v.map(function (x, i) { return x * 1e-15 * clock / Math.max(1, windowEnd(i) - windowStart(i)); }); };
    var parts = ['compute', 'sram', 'fabric'].map(function (k) { return { name: k + ' (dynamic)', values: watts(en.series[k]) }; });
    var total = parts[0].values.map(function (v, i) { return v + parts[1].values[i] + parts[2].values[i] + leak; });
    box.appendChild(el('h2', { text: 'Power over time' + (D.fabric.length > 1 ? ' — wafer ' + f.wafer : '') }));
    var ch = lineChart({ id: 'power-time-w' + f.wafer, x: windowsX(nw), height: 200, ylabel: 'W', xlabel: 'cycle (' + si(clock) + 'Hz clock)',
      series: [{ name: 'wafer power (with ' + num(leak, 3) + ' W leakage)', values: total }].concat(parts) });
    var joules = en.totals.total * 1e-15;
    var st = D.energy.stats && D.energy.stats.wafer;
    var dyn = st ? st.lanes + st.instructions + st.active_cycles + st.sram + st.router + st.link + st.ramp : null;
    box.appendChild(el('p', { class: 'note', text: 'The traced regions\' dynamic energy adds up to ' + num(joules) + ' J' +
      (dyn !== null ? ' (the run\'s statistics: ' + num(dyn) + ' J of dynamic wafer energy over the whole grid)' : '') +
      '; leakage adds its power in every window. Energy per component and per step: stats.json, group energy (docs/energy.md).' }));
    box.appendChild(ch.figure);
    return [ch];
  }

  function windowStart(i) { return i * trace.window_cycles; }
  function windowEnd(i) { return Math.min(trace.end_cycle, (i + 1) * trace.window_cycles); }
  function windowsX(n) { var x = []; for (var i = 0; i < n; i++) x.push([windowStart(i), windowEnd(i)]); return x; }
  function perCycle(v) { return v.map(function (x, i) { return x / Math.max(1, windowEnd(i) - windowStart(i)); }); }

  function hotspotTable(f) {
    if (f.totals.stalled === 0)
      return el('p', { class: 'note', id: 'hotspots-w' + f.wafer, text: 'No credit stalls in this run: no output ever waited for a credit.' });
    var head = ['#', 'region (x, y)', 'direction', 'color', 'stall cycles', 'stall share', 'link utilization', 'mean queued'];
    var table = el('table', { class: 'hotspots', id: 'hotspots-w' + f.wafer }, [
      el('thead', null, el('tr', null, head.map(function (h, i) { return el('th', { class: i < 4 ? 'l' : null, text: h }); })))]);
    var body = el('tbody');
    f.hotspots.forEach(function (h, i) {
      var where = h.x0 === h.x1 && h.y0 === h.y1 ? '(' + h.x0 + ', ' + h.y0 + ')' : '(' + h.x0 + ', ' + h.y0 + ')–(' + h.x1 + ', ' + h.y1 + ')';
      body.appendChild(el('tr', { 'data-x': h.x0, 'data-y': h.y0, 'data-dir': DIRS[h.dir], 'data-color': h.color === null ? 'all' : h.color }, [
        el('td', { class: 'l', text: String(i + 1) }), el('td', { class: 'l mono', text: where }),
        el('td', { class: 'l', text: DIRS[h.dir] }), el('td', { class: 'l', text: h.color === null ? 'all' : String(h.color) }),
        el('td', { text: num(h.stalled) }), el('td', { text: pct(h.share) }), el('td', { text: pct(h.utilization) }),
        el('td', { text: num(h.occupancy_mean, 2) })]));
    });
    table.appendChild(body);
    return el('div', null, [
      el('p', { class: 'note', text: 'The (region, output direction, color) with the most credit-stall cycles over the run. ' +
        'Stall share: part of all stall cycles. Link utilization: wavelets of that color per link per cycle on that output. ' +
        'Mean queued: wavelets of that color in the input queues from that direction, per router.' }), table]);
  }

  function busiestTable(f) {
    if (!f.busiest.length) return el('p', { class: 'note', text: 'No wavelet was forwarded.' });
    var head = ['#', 'region (x, y)', 'direction', 'link utilization', 'wavelets', 'stall cycles', 'stall share'];
    var table = el('table', { class: 'busiest', id: 'busiest-w' + f.wafer }, [
      el('thead', null, el('tr', null, head.map(function (h, i) { return el('th', { class: i < 3 ? 'l' : null, text: h }); })))]);
    var body = el('tbody');
    f.busiest.forEach(function (h, i) {
      var where = h.x0 === h.x1 && h.y0 === h.y1 ? '(' + h.x0 + ', ' + h.y0 + ')' : '(' + h.x0 + ', ' + h.y0 + ')–(' + h.x1 + ', ' + h.y1 + ')';
      body.appendChild(el('tr', { 'data-x': h.x0, 'data-y': h.y0, 'data-dir': DIRS[h.dir] }, [
        el('td', { class: 'l', text: String(i + 1) }), el('td', { class: 'l mono', text: where }),
        el('td', { class: 'l', text: DIRS[h.dir] }), el('td', { text: pct(h.utilization) }),
        el('td', { text: num(h.forwarded) }), el('td', { text: num(h.stalled) }), el('td', { text: pct(h.share) })]));
    });
    table.appendChild(body);
    return el('div', null, [el('p', { class: 'note', text: 'Outputs by utilization over the run (wavelets per link per cycle, all colors); ramp outputs deliver to the PE.' }), table]);
  }

  // ---- line charts -------------------------------------------------------------------------
  // opts: id, x: [[start, end]] per point (cycles), series: [{name, values}], xlabel, ylabel, unitScale
  function lineChart(opts) {
    var W = 880, H = opts.height || 230, L = 58, R = 16, T = 10, B = opts.xlabel ? 34 : 22;
    var node = svg('svg', { class: 'chart', id: opts.id, width: W, height: H, viewBox: '0 0 ' + W + ' ' + H });
    var n = opts.x.length;
    var xmax = n ? opts.x[n - 1][1] : 1;
    var ymax = 0;
    opts.series.forEach(function (s) { s.values.forEach(function (v) { if (isFinite(v)) ymax = Math.max(ymax, v); }); });
    if (ymax <= 0) ymax = 1;
    ymax = 4 * niceCeil(ymax / 4);
    var X = function (c) { return L + (W - L - R) * c / Math.max(1, xmax); };
    var Y = function (v) { return T + (H - T - B) * (1 - v / ymax); };
    var band = svg('rect', { x: 0, y: T, width: 0, height: H - T - B, fill: '#2f6fd6', 'fill-opacity': 0.10 });
    node.appendChild(band);
    for (var k = 0; k <= 4; k++) {
      var v = ymax * k / 4;
      node.appendChild(svg('line', { class: 'gridline', x1: L, x2: W - R, y1: Y(v), y2: Y(v) }));
      node.appendChild(svg('text', { x: L - 6, y: Y(v) + 4, 'font-size': 10, 'text-anchor': 'end', text: si(v) }));
    }
    var xstep = niceCeil(xmax / 6);
    for (var c = 0; c <= xmax; c += xstep)
      node.appendChild(svg('text', { x: X(c), y: H - B + 14, 'font-size': 10, 'text-anchor': 'middle', text: si(c) }));
    if (opts.xlabel) node.appendChild(svg('text', { x: (L + W - R) / 2, y: H - 4, 'font-size': 10.5, 'text-anchor': 'middle', text: opts.xlabel }));
    if (opts.ylabel) node.appendChild(svg('text', { x: 12, y: (T + H - B) / 2, 'font-size': 10.5, 'text-anchor': 'middle',
                                   transform: 'rotate(-90 12 ' + ((T + H - B) / 2) + ')', text: opts.ylabel }));
    node.appendChild(svg('line', { class: 'axis', x1: L, x2: W - R, y1: H - B, y2: H - B, stroke: '#9aa3b2' }));
    var colorOf = function (si) { return SERIES_COLORS[(si + (opts.color || 0)) % SERIES_COLORS.length]; };
    opts.series.forEach(function (s, si) {
      // a step line: each window holds its value over [start, end)
      var d = '';
      for (var i = 0; i < n; i++) {
        var y = Y(isFinite(s.values[i]) ? s.values[i] : 0);
        d += (i ? 'L' : 'M') + X(opts.x[i][0]).toFixed(1) + ',' + y.toFixed(1) + 'L' + X(opts.x[i][1]).toFixed(1) + ',' + y.toFixed(1);
      }
      node.appendChild(svg('path', { d: d || 'M0,0', fill: 'none', stroke: colorOf(si), 'stroke-width': 1.6 },
                           svg('title', { text: s.name })));
    });
    var legend = el('div', { class: 'legend' }, opts.series.map(function (s, si) {
      return el('span', null, [el('span', { class: 'sw', style: 'background:' + colorOf(si) }), s.name]);
    }));
    var figure = el('figure', { class: 'panel' }, [
      el('figcaption', null, [legend, exportButton(function () { return node; }, opts.id + '.svg')]), node]);
    return {
      figure: figure,
      mark: function (fr) {
        if (!fr) { band.setAttribute('width', 0); return; }
        band.setAttribute('x', X(fr.start));
        band.setAttribute('width', Math.max(1, X(fr.end) - X(fr.start)));
      }
    };
  }
  function niceCeil(v) {
    if (!(v > 0)) return 1;
    var p = Math.pow(10, Math.floor(Math.log10(v)));
    var m = [1, 2, 2.5, 4, 5, 10].find(function (k) { return k * p >= v * 1.0001; });
    return m * p;
  }

  // ---- sections ----------------------------------------------------------------------------
  root.appendChild(el('h2', { text: D.fabric.some(function (f) { return f.pe; }) ? 'PE cores and fabric congestion' : 'Fabric congestion' }));
  if (!D.fabric.length) {
    root.appendChild(el('p', { class: 'absent', text: 'Not recorded: ' + D.fabric_absent + '.' }));
  } else {
    var boxes = D.fabric.map(fabricSection);
    if (boxes.length > 1) {
      var pick = el('select', { 'aria-label': 'wafer' }, D.fabric.map(function (f, i) { return el('option', { value: i, text: 'wafer ' + f.wafer }); }));
      pick.onchange = function () { boxes.forEach(function (b, i) { b.style.display = i === Number(pick.value) ? '' : 'none'; }); };
      root.appendChild(el('div', { class: 'controls' }, [el('label', null, ['wafer', pick])]));
      boxes.forEach(function (b, i) { if (i) b.style.display = 'none'; });
    }
    boxes.forEach(function (b) { root.appendChild(b); });
  }

  var edges = (D.links && D.links.edges) || [];
  root.appendChild(el('h2', { text: edges.length ? 'Weights from MemoryX into the wafers, gradients back' : 'MemoryX and SwarmX bandwidth over time' }));
  if (!D.links.present) {
    root.appendChild(el('p', { class: 'absent', text: 'Not recorded: ' + D.links.reason + '.' }));
  } else {
    var nwin = D.links.series.length ? D.links.series[0].bytes.length : 0;
    var secondsOf = function (i) { return (windowEnd(i) - windowStart(i)) / clock; };
    var chart = lineChart({
      id: 'bandwidth', x: windowsX(nwin), xlabel: 'cycle (' + si(clock) + 'Hz clock; ' + seconds(trace.end_cycle / clock) + ' in all)', ylabel: 'Gb/s',
      series: D.links.series.map(function (s) {
        return { name: s.name, values: s.bytes.map(function (b, i) { return 8 * b / secondsOf(i) / 1e9; }) };
      })
    });
    root.appendChild(chart.figure);
    var lt = el('table', { id: 'links' }, el('tr', null, ['link', 'group', 'bandwidth', 'bytes', 'mean over the run'].map(function (h, i) {
      return el('th', { class: i < 2 ? 'l' : null, text: h }); })));
    D.links.links.forEach(function (l) {
      lt.appendChild(el('tr', null, [el('td', { class: 'l', text: l.label }), el('td', { class: 'l', text: l.group }),
        el('td', { text: num(l.bandwidth_bps / 1e9, 1) + ' Gb/s' }), el('td', { text: bytes(l.bytes) }),
        el('td', { text: num(8 * l.bytes / (trace.end_cycle / clock) / 1e9, 2) + ' Gb/s' })]));
    });
    root.appendChild(el('p', { class: 'note', text: 'Bytes of each window divided by its length: a chunk counts in the windows its transfer spans.' +
      (edges.length ? ' The weights\u2019 path: MemoryX out, SwarmX down, the wafer edges into the meshes (4 bytes a wavelet; the PEs waiting for them are the fabric-input stalls above); the gradients\u2019 path back: the meshes into the wafer edges, the edges out, SwarmX up, MemoryX in.' : '') }));
    root.appendChild(lt);
    if (edges.length) {
      var ecols = [['wavelets_in', 'wavelets in (weights)'], ['wavelets_out', 'wavelets out (gradients)'], ['starved', 'starved cycles'],
        ['fabric_blocked', 'no fabric credit (channel-cycles)'], ['io_limited_in', 'I/O limit in (channel-cycles)'],
        ['io_limited_out', 'I/O limit out (channel-cycles)'], ['held_gradients', 'gradients held (cycles)']];
      var et = el('table', { id: 'edges' }, el('tr', null, [el('th', { class: 'l', text: 'wafer edge' })].concat(ecols.map(function (c) { return el('th', { text: c[1] }); }))));
      edges.forEach(function (e) {
        et.appendChild(el('tr', null, [el('td', { class: 'l', text: 'wafer ' + e.wafer })].concat(ecols.map(function (c) { return el('td', { text: num(e[c[0]] || 0) }); }))));
      });
      root.appendChild(et);
    }
  }

  root.appendChild(el('h2', { text: 'Layer phases' }));
  if (!D.phases.present) {
    root.appendChild(el('p', { class: 'absent', text: 'Not recorded: ' + D.phases.reason + '.' }));
  } else {
    var pt = el('table', { id: 'phases' }, el('tr', null, ['wafer', 'phase', 'start', 'end', 'cycles'].map(function (h, i) {
      return el('th', { class: i < 2 ? 'l' : null, text: h }); })));
    D.phases.rows.forEach(function (r) {
      pt.appendChild(el('tr', null, [el('td', { class: 'l', text: String(r.wafer) }), el('td', { class: 'l', text: r.name }),
        el('td', { text: num(r.start) }), el('td', { text: num(r.end) }), el('td', { text: num(r.end - r.start) })]));
    });
    root.appendChild(pt);
  }

  root.appendChild(el('h2', { text: 'Per-step breakdown' }));
  if (!D.steps.present) {
    root.appendChild(el('p', { class: 'absent', text: 'Not recorded: ' + D.steps.reason + '.' }));
  } else {
    root.appendChild(stepsView(D.steps.rows));
  }

  function stepsView(rows) {
    var box = el('div');
    var head = ['step', 'time'];
    ACTIVITIES.forEach(function (a) { head.push(a + ' busy', a + ' exposed'); });
    head.push('idle');
    var t = el('table', { id: 'steps' }, el('tr', null, head.map(function (h) { return el('th', { text: h }); })));
    rows.forEach(function (r) {
      var cells = [el('td', { text: String(r.step) }), el('td', { text: seconds(r.time_ps * 1e-12) })];
      ACTIVITIES.forEach(function (a) {
        cells.push(el('td', { text: seconds(r[a + '_ps'] * 1e-12) }), el('td', { text: seconds(r['exposed_' + a + '_ps'] * 1e-12) }));
      });
      cells.push(el('td', { text: seconds(r.idle_ps * 1e-12) }));
      t.appendChild(el('tr', null, cells));
    });
    // stacked bars: the exposed part of each activity and the idle time make up the step
    var W = 880, rowH = 22, L = 60, R = 16;
    var H = rows.length * (rowH + 6) + 30;
    var node = svg('svg', { class: 'chart', id: 'steps-chart', width: W, height: H, viewBox: '0 0 ' + W + ' ' + H });
    var tmax = Math.max.apply(null, rows.map(function (r) { return r.time_ps; }).concat([1]));
    rows.forEach(function (r, i) {
      var y = 4 + i * (rowH + 6), x = L;
      node.appendChild(svg('text', { x: L - 6, y: y + rowH / 2 + 4, 'font-size': 11, 'text-anchor': 'end', text: 'step ' + r.step }));
      ACTIVITIES.concat(['idle']).forEach(function (a) {
        var v = a === 'idle' ? r.idle_ps : r['exposed_' + a + '_ps'];
        var w = (W - L - R) * v / tmax;
        if (w <= 0) return;
        node.appendChild(svg('rect', { x: x, y: y, width: w, height: rowH, fill: ACT_COLORS[a] },
                             svg('title', { text: a + (a === 'idle' ? '' : ' (exposed)') + ': ' + seconds(v * 1e-12) })));
        x += w;
      });
    });
    node.appendChild(svg('text', { x: L, y: H - 6, 'font-size': 10, text: '0' }));
    node.appendChild(svg('text', { x: W - R, y: H - 6, 'font-size': 10, 'text-anchor': 'end', text: seconds(tmax * 1e-12) }));
    var legend = el('div', { class: 'legend' }, ACTIVITIES.concat(['idle']).map(function (a) {
      return el('span', null, [el('span', { class: 'sw', style: 'background:' + ACT_COLORS[a] }), a === 'idle' ? 'idle' : a + ' (exposed)']);
    }));
    box.appendChild(el('figure', { class: 'panel' }, [el('figcaption', null, [legend, exportButton(function () { return node; }, 'steps.svg')]), node]));
    box.appendChild(el('p', { class: 'note', text: 'Busy: time the activity was active in the step; exposed: active and not hidden by a higher-priority activity (compute > stream > reduce > optimizer).' }));
    box.appendChild(t);
    return box;
  }

  root.appendChild(el('h2', { text: 'Trace files' }));
  var files = el('table', { id: 'files' }, el('tr', null, [el('th', { class: 'l', text: 'file' }), el('th', { text: 'size' }), el('th', { class: 'l', text: 'open with' })]));
  trace.files.forEach(function (file) {
    var how = file.name === 'timeline.json' ? 'ui.perfetto.dev (Open trace file) or chrome://tracing' :
              file.name.endsWith('.vcd') ? 'a waveform viewer (GTKWave, Surfer)' :
              file.name.endsWith('.csv') ? 'any CSV reader (columns in meta.json, docs/trace.md)' : '';
    files.appendChild(el('tr', null, [el('td', { class: 'l mono', text: 'trace/' + file.name }), el('td', { text: bytes(file.bytes) }), el('td', { class: 'l', text: how })]));
  });
  root.appendChild(files);
  root.appendChild(el('p', { class: 'note', text: 'Run folder: ' + D.run.folder + ' · wafersim ' + D.run.version }));

  window.wafersimReport = {
    data: D,
    exportSvg: function (id) { return svgText(document.getElementById(id)); }
  };
  document.body.setAttribute('data-report-ready', '1');
})();
