(function () {
  'use strict';
  var SVG = 'http://www.w3.org/2000/svg';
  var data = JSON.parse(document.getElementById('report-data').textContent);
  var metric = 'bytes_at_peak';  // a metric's key in the tree's nodes
  var zoomed = null;

  function el(name, attrs, parent) {
    var node = document.createElementNS(SVG, name);
    for (var k in attrs) node.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(node);
    return node;
  }
  function bytes(n) {
    var units = ['KiB', 'MiB', 'GiB', 'TiB'];
    var sign = n < 0 ? '-' : '';
    n = Math.abs(n);
    if (n < 1024) return sign + n + ' B';
    var u = -1;
    do { n /= 1024; ++u; } while (n >= 1024 && u < units.length - 1);
    return sign + n.toFixed(1) + ' ' + units[u];
  }
  function hue(name) {
    var h = 0;
    for (var i = 0; i < name.length; ++i) h = (h * 31 + name.charCodeAt(i)) >>> 0;
    return h;
  }
  function color(node) {
    var h = hue(node.name);
    if (/\.py\)$/.test(node.name)) return 'hsl(' + (190 + h % 40) + ',55%,65%)';
    if (/\+0x[0-9a-f]+$/.test(node.name)) return 'hsl(0,0%,' + (70 + h % 15) + '%)';
    return 'hsl(' + (h % 55) + ',' + (65 + h % 20) + '%,' + (58 + h % 10) + '%)';
  }

  // Parent links, for zooming.
  (function link(node, parent) {
    node.parent = parent;
    for (var i = 0; i < node.children.length; ++i) link(node.children[i], node);
  })(data.tree, null);

  var flame = document.getElementById('flame');
  var ROW = 18, WIDTH = 1200;

  function depthOf(node) { var d = 0; while (node.parent) { node = node.parent; ++d; } return d; }
  function maxDepth(node) {
    var best = 0;
    for (var i = 0; i < node.children.length; ++i) best = Math.max(best, maxDepth(node.children[i]));
    return best + 1;
  }

  function drawFlame() {
    while (flame.firstChild) flame.removeChild(flame.firstChild);
    WIDTH = Math.max(Math.round(flame.getBoundingClientRect().width), 300) || 1200;
    var root = zoomed || data.tree;
    var total = root[metric];
    var top = depthOf(root);
    var rows = top + maxDepth(root);
    flame.setAttribute('viewBox', '0 0 ' + WIDTH + ' ' + rows * ROW);
    flame.setAttribute('height', rows * ROW);
    var pattern = null;
    var query = document.getElementById('search').value;
    if (query) { try { pattern = new RegExp(query, 'i'); } catch (e) { pattern = null; } }
    var matched = 0;

    function box(node, x, w, depth, ancestor, insideMatch) {
      var g = el('g', {'class': ancestor ? 'ancestor' : 'frame'}, flame);
      var title = el('title', {}, g);
      var share = data.tree[metric] > 0 ? (100 * node[metric] / data.tree[metric]).toFixed(1) : '0.0';
      title.textContent = node.name + '\n' + bytes(node[metric]) + ' (' + share + '% of all)';
      var rect = el('rect', {x: x.toFixed(2), y: depth * ROW, width: Math.max(w, 0.5).toFixed(2),
                             height: ROW - 1, fill: color(node)}, g);
      var isMatch = pattern !== null && pattern.test(node.name);
      if (isMatch) {
        rect.setAttribute('class', 'match');
        if (!insideMatch && !ancestor) matched += node[metric];
      }
      if (w > 30) {
        var text = el('text', {x: (x + 3).toFixed(2), y: depth * ROW + 13}, g);
        var chars = Math.floor((w - 6) / 6.6);
        text.textContent = node.name.length > chars ? node.name.slice(0, Math.max(chars - 1, 1)) + '\u2026' : node.name;
      }
      g.addEventListener('click', function () { zoomed = (node === zoomed) ? node.parent : node; drawFlame(); });
      return isMatch;
    }
    var chain = [];
    for (var a = root.parent; a; a = a.parent) chain.unshift(a);
    for (var i = 0; i < chain.length; ++i) box(chain[i], 0, WIDTH, i, true, false);
    (function layout(node, x, depth, insideMatch) {
      var w = total > 0 ? WIDTH * node[metric] / total : 0;
      if (w < 0.3 && node !== root) return;
      var isMatch = box(node, x, node === root ? WIDTH : w, depth, false, insideMatch);
      var cx = x;
      for (var i = 0; i < node.children.length; ++i) {
        var child = node.children[i];
        if (child[metric] <= 0) continue;
        layout(child, cx, depth + 1, insideMatch || isMatch);
        cx += total > 0 ? WIDTH * child[metric] / total : 0;
      }
    })(root, 0, top, false);
    var status = bytes(total) + (zoomed ? ' in ' + root.name : ' in all sites');
    if (pattern) status += '; matched ' + bytes(matched) + (total > 0 ? ' (' + (100 * matched / total).toFixed(1) + '%)' : '');
    document.getElementById('status').textContent = status;
  }

  function drawTimeline() {
    var svg = document.getElementById('timeline');
    var samples = data.timeline;
    var W = Math.max(Math.round(svg.getBoundingClientRect().width), 300) || 1200;
    var H = 240, L = 78, R = 16, T = 12, B = 30;
    svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    svg.setAttribute('height', H);
    if (samples.length === 0) {
      el('text', {x: W / 2, y: H / 2, 'text-anchor': 'middle'}, svg).textContent = 'no timeline samples in this report';
      el('path', {id: 'timeline-in-use', d: 'M0 0', fill: 'none'}, svg);
      return;
    }
    var t0 = samples[0][0], t1 = samples[samples.length - 1][0];
    if (t1 <= t0) t1 = t0 + 1;
    var ymax = 1;
    for (var i = 0; i < samples.length; ++i) ymax = Math.max(ymax, samples[i][1] + samples[i][2]);
    function X(t) { return L + (W - L - R) * (t - t0) / (t1 - t0); }
    function Y(v) { return H - B - (H - B - T) * v / ymax; }
    function area(values) {
      var d = 'M' + X(samples[0][0]).toFixed(1) + ' ' + Y(0).toFixed(1);
      for (var i = 0; i < samples.length; ++i) {
        d += ' L' + X(samples[i][0]).toFixed(1) + ' ' + Y(values(samples[i])).toFixed(1);
      }
      return d + ' L' + X(samples[samples.length - 1][0]).toFixed(1) + ' ' + Y(0).toFixed(1) + ' Z';
    }
    for (var k = 0; k <= 4; ++k) {
      var v = ymax * k / 4, y = Y(v);
      el('line', {x1: L, x2: W - R, y1: y, y2: y, stroke: '#eee'}, svg);
      el('text', {x: L - 6, y: y + 4, 'text-anchor': 'end'}, svg).textContent = bytes(Math.round(v));
      var t = t0 + (t1 - t0) * k / 4;
      var anchor = k === 0 ? 'start' : k === 4 ? 'end' : 'middle';
      el('text', {x: X(t), y: H - 10, 'text-anchor': anchor}, svg).textContent = (t - t0).toFixed(1) + ' s';
    }
    el('path', {id: 'timeline-cached', d: area(function (s) { return s[1] + s[2]; }), fill: '#9cc3f0'}, svg);
    el('path', {id: 'timeline-in-use', d: area(function (s) { return s[1]; }), fill: '#3b7dd8'}, svg);
    if (data.peak_time > 0 && data.peak_time >= t0 && data.peak_time <= t1) {
      var px = X(data.peak_time);
      el('line', {x1: px, x2: px, y1: T, y2: H - B, stroke: '#c0392b', 'stroke-dasharray': '4 3'}, svg);
      el('text', {x: px + 4, y: T + 10}, svg).textContent = 'peak ' + bytes(data.peak_bytes);
    }
    el('line', {x1: L, x2: W - R, y1: Y(0), y2: Y(0), stroke: '#999'}, svg);
  }

  function drawSites() {
    var body = document.querySelector('#sites tbody');
    data.sites.forEach(function (site, i) {
      var row = document.createElement('tr');
      var cells = [String(i + 1), bytes(site.v[0]), bytes(site.v[1]), site.live_count.toLocaleString('en'),
                   bytes(site.v[3]), site.v[2].toLocaleString('en'), site.kind];
      cells.forEach(function (text) {
        var td = document.createElement('td');
        td.textContent = text;
        row.appendChild(td);
      });
      var cell = document.createElement('td');
      cell.className = 'site';
      var details = document.createElement('details');
      var summary = document.createElement('summary');
      summary.textContent = site.frames.length ? site.frames[0] : '[no stack]';
      details.appendChild(summary);
      var list = document.createElement('ol');
      site.frames.forEach(function (frame) {
        var item = document.createElement('li');
        item.textContent = frame;
        list.appendChild(item);
      });
      details.appendChild(list);
      cell.appendChild(details);
      row.appendChild(cell);
      body.appendChild(row);
    });
  }

  function findNode(node, name) {
    if (node.name === name) return node;
    for (var i = 0; i < node.children.length; ++i) {
      var found = findNode(node.children[i], name);
      if (found) return found;
    }
    return null;
  }

  // The address may preselect a view (also used by the tests):
  // #metric=live|peak|total&search=REGEX&zoom=FUNCTION
  location.hash.replace(/^#/, '').split('&').forEach(function (part) {
    var kv = part.split('=');
    var value = decodeURIComponent(kv[1] || '');
    if (kv[0] === 'search') document.getElementById('search').value = value;
    if (kv[0] === 'zoom') zoomed = findNode(data.tree, value);
    if (kv[0] === 'metric') {
      var key = {peak: 'bytes_at_peak', live: 'live_bytes', total: 'total_bytes'}[value];
      if (key !== undefined) metric = key;
    }
  });
  if (data.tree[metric] === 0 && data.tree.live_bytes > 0) metric = 'live_bytes';  // nothing recorded at the peak
  var initial = document.querySelector('input[name=metric][value="' + metric + '"]');
  if (initial) initial.checked = true;
  document.getElementById('title').textContent = data.title;
  document.getElementById('header').textContent = data.header;
  var radios = document.querySelectorAll('input[name=metric]');
  for (var i = 0; i < radios.length; ++i) {
    radios[i].addEventListener('change', function (e) { metric = e.target.value; drawFlame(); });
  }
  document.getElementById('search').addEventListener('input', drawFlame);
  document.getElementById('reset').addEventListener('click', function () { zoomed = null; drawFlame(); });
  window.addEventListener('resize', drawFlame);
  drawFlame();
  drawTimeline();
  drawSites();
  document.body.setAttribute('data-rendered', 'yes');
})();
