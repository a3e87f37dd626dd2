(function () {
  'use strict';

  // Layout and text, without the DOM: under Node they are exported for tests/analyzer/page_js_test.js
  // and nothing is drawn.

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
  // Python frames blue, unsymbolized module+offset frames grey, native functions warm.
  function color(name) {
    var h = hue(name);
    if (/\.py\)$/.test(name)) return 'hsl(' + (190 + h % 40) + ',55%,65%)';
    if (/\+0x[0-9a-f]+$/.test(name)) return 'hsl(0,0%,' + (70 + h % 15) + '%)';
    return 'hsl(' + (h % 55) + ',' + (65 + h % 20) + '%,' + (58 + h % 10) + '%)';
  }

  // Parent links, for zooming.
  function linkParents(node, parent) {
    node.parent = parent;
    for (var i = 0; i < node.children.length; ++i) linkParents(node.children[i], node);
  }
  function depthOf(node) { var d = 0; while (node.parent) { node = node.parent; ++d; } return d; }
  function maxDepth(node) {
    var best = 0;
    for (var i = 0; i < node.children.length; ++i) best = Math.max(best, maxDepth(node.children[i]));
    return best + 1;
  }
  function findNode(node, name) {
    if (node.name === name) return node;
    for (var i = 0; i < node.children.length; ++i) {
      var found = findNode(node.children[i], name);
      if (found) return found;
    }
    return null;
  }

  // The tree without the native frames of the interpreter and libffi ("interpreter": true): each
  // such node gives way to its children, and siblings that then share a name are summed into one.
  var TREE_METRICS = ['bytes_at_peak', 'live_bytes', 'total_count', 'total_bytes'];
  function withoutInterpreter(node) {
    var out = {name: node.name, children: []};
    TREE_METRICS.forEach(function (m) { out[m] = node[m]; });
    var byName = {};
    function adopt(child) {
      if (child.interpreter) {
        child.children.forEach(adopt);
        return;
      }
      var kept = withoutInterpreter(child);
      var same = Object.prototype.hasOwnProperty.call(byName, kept.name) ? byName[kept.name] : null;
      if (same === null) {
        byName[kept.name] = kept;
        out.children.push(kept);
        return;
      }
      TREE_METRICS.forEach(function (m) { same[m] += kept[m]; });
      var merged = withoutInterpreter({name: same.name, children: same.children.concat(kept.children)});
      same.children = merged.children;
    }
    node.children.forEach(adopt);
    out.children.sort(function (a, b) { return a.name < b.name ? -1 : a.name > b.name ? 1 : 0; });
    return out;
  }

  // The search box's text as a case-insensitive regular expression; null when empty or invalid.
  function searchPattern(query) {
    if (!query) return null;
    try { return new RegExp(query, 'i'); } catch (e) { return null; }
  }

  // The flame graph of `root` (a linked tree's node) by `metric`, `width` pixels wide, in drawing
  // order: root's callers as full-width ancestor bars, then root and its callees, each as wide as its
  // share of root. `matched` sums the frames matching `pattern` that no matching caller already holds.
  function flameFrames(root, metric, width, pattern) {
    var frames = [];
    var matched = 0;
    var total = root[metric];
    var top = depthOf(root);

    function add(node, x, w, depth, ancestor, insideMatch) {
      var isMatch = pattern !== null && pattern.test(node.name);
      if (isMatch && !insideMatch && !ancestor) matched += node[metric];
      frames.push({node: node, x: x, width: w, depth: depth, ancestor: ancestor, match: isMatch});
      return isMatch;
    }
    var chain = [];
    for (var a = root.parent; a; a = a.parent) chain.unshift(a);
    for (var i = 0; i < chain.length; ++i) add(chain[i], 0, width, i, true, false);
    (function layout(node, x, depth, insideMatch) {
      var w = total > 0 ? width * node[metric] / total : 0;
      if (w < 0.3 && node !== root) return;
      var isMatch = add(node, x, node === root ? width : w, depth, false, insideMatch);
      var cx = x;
      for (var i = 0; i < node.children.length; ++i) {
        var child = node.children[i];
        if (child[metric] <= 0) continue;
        layout(child, cx, depth + 1, insideMatch || isMatch);
        cx += total > 0 ? width * child[metric] / total : 0;
      }
    })(root, 0, top, false);
    return {frames: frames, matched: matched, rows: top + maxDepth(root)};
  }

  // A frame's tooltip: its name and bytes, and their share of the whole tree's.
  function frameTitle(node, tree, metric) {
    var share = tree[metric] > 0 ? (100 * node[metric] / tree[metric]).toFixed(1) : '0.0';
    return node.name + '\n' + bytes(node[metric]) + ' (' + share + '% of all)';
  }
  // A frame's label cut to `width` pixels of 11px monospace; null where no label fits.
  function frameLabel(name, width) {
    if (width <= 30) return null;
    var chars = Math.floor((width - 6) / 6.6);
    return name.length > chars ? name.slice(0, Math.max(chars - 1, 1)) + '\u2026' : name;
  }
  // The line beside the search box; `zoomedName` null when not zoomed, `matched` null when not searching.
  function flameStatus(total, zoomedName, matched) {
    var status = bytes(total) + (zoomedName !== null ? ' in ' + zoomedName : ' in all sites');
    if (matched !== null) status += '; matched ' + bytes(matched) + (total > 0 ? ' (' + (100 * matched / total).toFixed(1) + '%)' : '');
    return status;
  }

  // The timeline's height and the margins around its plot, in pixels.
  var TIMELINE = {height: 240, left: 78, right: 16, top: 12, bottom: 30};

  // Pixel positions on a timeline `width` pixels wide for samples' times and byte counts: time runs
  // from the first sample to the last, bytes from 0 to the most in use plus cached.
  function timelineScale(samples, width) {
    var t0 = samples[0][0], t1 = samples[samples.length - 1][0];
    if (t1 <= t0) t1 = t0 + 1;
    var ymax = 1;
    for (var i = 0; i < samples.length; ++i) ymax = Math.max(ymax, samples[i][1] + samples[i][2]);
    var H = TIMELINE.height, L = TIMELINE.left, R = TIMELINE.right, T = TIMELINE.top, B = TIMELINE.bottom;
    return {
      t0: t0, t1: t1, ymax: ymax,
      x: function (t) { return L + (width - L - R) * (t - t0) / (t1 - t0); },
      y: function (v) { return H - B - (H - B - T) * v / ymax; }
    };
  }
  // An SVG path closing the area under values(sample) down to zero.
  function timelineArea(samples, scale, values) {
    var d = 'M' + scale.x(samples[0][0]).toFixed(1) + ' ' + scale.y(0).toFixed(1);
    for (var i = 0; i < samples.length; ++i) {
      d += ' L' + scale.x(samples[i][0]).toFixed(1) + ' ' + scale.y(values(samples[i])).toFixed(1);
    }
    return d + ' L' + scale.x(samples[samples.length - 1][0]).toFixed(1) + ' ' + scale.y(0).toFixed(1) + ' Z';
  }

  // A pool segment of an out-of-memory panel as spans in address order that cover all of it: the
  // blocks the report lists (free or pending) and the allocated bytes between them ('used').
  function segmentSpans(segment) {
    var spans = [];
    var at = 0;
    segment.blocks.forEach(function (block) {
      if (block[0] > at) spans.push({offset: at, size: block[0] - at, state: 'used'});
      spans.push({offset: block[0], size: block[1], state: block[2]});
      at = block[0] + block[1];
    });
    if (at < segment.size) spans.push({offset: at, size: segment.size - at, state: 'used'});
    return spans;
  }
  // The line under a segment map that shows `shown` of the pool's `total` segments.
  function segmentMapNote(shown, total) {
    if (total === 0) return 'The pool held no segments.';
    if (shown < total) return 'The first ' + shown + ' of ' + total + ' segments, in address order.';
    return total === 1 ? 'The pool\'s one segment.' : 'All ' + total + ' segments, in address order.';
  }

  // The view the address preselects (also used by the tests):
  // #metric=live|peak|total&search=REGEX&zoom=FUNCTION&interpreter=show|hide; the last of a
  // repeated key counts.
  function parseHash(hash) {
    var view = {};
    hash.replace(/^#/, '').split('&').forEach(function (part) {
      var kv = part.split('=');
      var value = decodeURIComponent(kv[1] || '');
      if (kv[0] === 'search') view.search = value;
      if (kv[0] === 'zoom') view.zoom = value;
      if (kv[0] === 'interpreter' && (value === 'show' || value === 'hide')) view.interpreter = value;
      if (kv[0] === 'metric') {
        var keys = {peak: 'bytes_at_peak', live: 'live_bytes', total: 'total_bytes'};
        // Own names only: "constructor" and the like are not metrics.
        if (Object.prototype.hasOwnProperty.call(keys, value)) view.metric = keys[value];
      }
    });
    return view;
  }

  // The metric the page opens on: the address's, else live bytes when the report was written at exit
  // with memory still held (leaks), else bytes at peak; live bytes where the peak recorded nothing.
  function initialMetric(leaked, tree, view) {
    var chosen = view.metric !== undefined ? view.metric : leaked ? 'live_bytes' : 'bytes_at_peak';
    if (tree[chosen] === 0 && tree.live_bytes > 0) chosen = 'live_bytes';
    return chosen;
  }

  if (typeof module === 'object' && module.exports) {
    module.exports = {
      bytes: bytes, color: color, linkParents: linkParents, findNode: findNode,
      searchPattern: searchPattern, flameFrames: flameFrames, frameTitle: frameTitle,
      frameLabel: frameLabel, flameStatus: flameStatus, timelineScale: timelineScale,
      timelineArea: timelineArea, segmentSpans: segmentSpans, segmentMapNote: segmentMapNote,
      parseHash: parseHash, withoutInterpreter: withoutInterpreter, initialMetric: initialMetric
    };
    return;
  }

  // The page.
  var SVG = 'http://www.w3.org/2000/svg';
  var data = JSON.parse(document.getElementById('report-data').textContent);
  var metric = 'bytes_at_peak';  // a metric's key in the tree's nodes
  var zoomed = null;
  var fullTree = data.tree;
  var pythonTree = withoutInterpreter(fullTree);
  linkParents(fullTree, null);
  linkParents(pythonTree, null);
  var tree = pythonTree;  // the one drawn: without interpreter frames unless asked

  function el(name, attrs, parent) {
    var node = document.createElementNS(SVG, name);
    for (var k in attrs) node.setAttribute(k, attrs[k]);
    if (parent) parent.appendChild(node);
    return node;
  }

  var flame = document.getElementById('flame');
  var ROW = 18;

  function drawFlame() {
    while (flame.firstChild) flame.removeChild(flame.firstChild);
    var width = Math.max(Math.round(flame.getBoundingClientRect().width), 300) || 1200;
    var root = zoomed || tree;
    var pattern = searchPattern(document.getElementById('search').value);
    var graph = flameFrames(root, metric, width, pattern);
    flame.setAttribute('viewBox', '0 0 ' + width + ' ' + graph.rows * ROW);
    flame.setAttribute('height', graph.rows * ROW);
    graph.frames.forEach(function (frame) {
      var node = frame.node;
      var g = el('g', {'class': frame.ancestor ? 'ancestor' : 'frame'}, flame);
      el('title', {}, g).textContent = frameTitle(node, tree, metric);
      var rect = el('rect', {x: frame.x.toFixed(2), y: frame.depth * ROW, width: Math.max(frame.width, 0.5).toFixed(2),
                             height: ROW - 1, fill: color(node.name)}, g);
      if (frame.match) rect.setAttribute('class', 'match');
      var label = frameLabel(node.name, frame.width);
      if (label !== null) el('text', {x: (frame.x + 3).toFixed(2), y: frame.depth * ROW + 13}, g).textContent = label;
      g.addEventListener('click', function () { zoomed = (node === zoomed) ? node.parent : node; drawFlame(); });
    });
    document.getElementById('status').textContent =
        flameStatus(root[metric], zoomed ? root.name : null, pattern ? graph.matched : null);
  }

  function drawTimeline() {
    var svg = document.getElementById('timeline');
    var samples = data.timeline;
    var W = Math.max(Math.round(svg.getBoundingClientRect().width), 300) || 1200;
    var H = TIMELINE.height, L = TIMELINE.left, R = TIMELINE.right, T = TIMELINE.top, B = TIMELINE.bottom;
    svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    svg.setAttribute('height', H);
    if (samples.length === 0) {
      el('text', {x: W / 2, y: H / 2, 'text-anchor': 'middle'}, svg).textContent = 'no timeline samples in this report';
      el('path', {id: 'timeline-in-use', d: 'M0 0', fill: 'none'}, svg);
      return;
    }
    var scale = timelineScale(samples, W);
    var t0 = scale.t0, t1 = scale.t1;
    for (var k = 0; k <= 4; ++k) {
      var v = scale.ymax * k / 4, y = scale.y(v);
      el('line', {x1: L, x2: W - R, y1: y, y2: y, stroke: '#eee'}, svg);
      el('text', {x: L - 6, y: y + 4, 'text-anchor': 'end'}, svg).textContent = bytes(Math.round(v));
      var t = t0 + (t1 - t0) * k / 4;
      var anchor = k === 0 ? 'start' : k === 4 ? 'end' : 'middle';
      el('text', {x: scale.x(t), y: H - 10, 'text-anchor': anchor}, svg).textContent = (t - t0).toFixed(1) + ' s';
    }
    el('path', {id: 'timeline-cached', d: timelineArea(samples, scale, function (s) { return s[1] + s[2]; }), fill: '#9cc3f0'}, svg);
    el('path', {id: 'timeline-in-use', d: timelineArea(samples, scale, function (s) { return s[1]; }), fill: '#3b7dd8'}, svg);
    if (data.peak_time > 0 && data.peak_time >= t0 && data.peak_time <= t1) {
      var px = scale.x(data.peak_time);
      el('line', {x1: px, x2: px, y1: T, y2: H - B, stroke: '#c0392b', 'stroke-dasharray': '4 3'}, svg);
      el('text', {x: px + 4, y: T + 10}, svg).textContent = 'peak ' + bytes(data.peak_bytes);
    }
    el('line', {x1: L, x2: W - R, y1: scale.y(0), y2: scale.y(0), stroke: '#999'}, svg);
  }

  var SEGMENT_COLORS = {used: '#3b7dd8', free: '#2ecc71', pending: '#f0a830'};

  function drawSegmentMap(segments, parent) {
    var ROW_HEIGHT = 12, GAP = 3, LABEL = 84;
    var svg = el('svg', {'class': 'segments'}, parent);
    var W = Math.max(Math.round(svg.getBoundingClientRect().width), 300) || 1200;
    var H = segments.length * (ROW_HEIGHT + GAP);
    svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    svg.setAttribute('height', H);
    segments.forEach(function (segment, row) {
      var y = row * (ROW_HEIGHT + GAP);
      el('text', {x: LABEL - 6, y: y + ROW_HEIGHT - 2, 'text-anchor': 'end'}, svg).textContent = bytes(segment.size);
      segmentSpans(segment).forEach(function (span) {
        var x = LABEL + (W - LABEL) * span.offset / segment.size;
        var rect = el('rect', {x: x.toFixed(2), y: y, height: ROW_HEIGHT, fill: SEGMENT_COLORS[span.state],
                               width: Math.max((W - LABEL) * span.size / segment.size, 0.5).toFixed(2)}, svg);
        el('title', {}, rect).textContent = span.state + ' ' + bytes(span.size) + ' at +0x' + span.offset.toString(16) +
            ' of the segment at 0x' + segment.base.toString(16);
      });
    });
  }

  function drawOutOfMemory() {
    var panel = document.getElementById('oom');
    if (data.oom.length === 0) return;
    panel.hidden = false;
    function add(tag, className, text) {
      var node = document.createElement(tag);
      if (className) node.className = className;
      if (text !== undefined) node.textContent = text;
      panel.appendChild(node);
      return node;
    }
    data.oom.forEach(function (section) {
      add('h2', '', section.title);
      add('p', 'verdict', section.explanation);
      add('pre', '', section.text);
      if (section.segment_count > 0) {
        var legend = add('div', 'legend', 'Pool segments at the failure:');
        ['used', 'free', 'pending'].forEach(function (state) {
          var swatch = document.createElement('span');
          swatch.style.background = SEGMENT_COLORS[state];
          legend.appendChild(swatch);
          legend.appendChild(document.createTextNode(state === 'used' ? 'allocated' : state === 'free' ? 'free' : 'waiting for a fence'));
        });
        drawSegmentMap(section.segments, panel);
      }
      add('p', 'hint', segmentMapNote(section.segments.length, section.segment_count));
    });
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
      summary.textContent = site.label !== null ? site.label : '[no stack]';
      details.appendChild(summary);
      site.stacks.forEach(function (stack) {
        var list = document.createElement('ol');
        stack.forEach(function (frame) {
          var item = document.createElement('li');
          item.textContent = frame;
          list.appendChild(item);
        });
        details.appendChild(list);
      });
      if (site.stack_count > site.stacks.length) {
        var more = document.createElement('p');
        more.className = 'hint';
        more.textContent = 'and ' + (site.stack_count - site.stacks.length) + ' more stacks';
        details.appendChild(more);
      }
      cell.appendChild(details);
      row.appendChild(cell);
      body.appendChild(row);
    });
    if (data.site_count > data.sites.length) {
      document.getElementById('sites-note').textContent =
          'The first ' + data.sites.length + ' of ' + data.site_count + ' sites by bytes at peak.';
    }
  }

  var view = parseHash(location.hash);
  if (view.search !== undefined) document.getElementById('search').value = view.search;
  if (view.interpreter === 'show') tree = fullTree;
  document.getElementById('hide-interpreter').checked = tree === pythonTree;
  if (view.zoom !== undefined) zoomed = findNode(tree, view.zoom);
  metric = initialMetric(data.leaked, tree, view);
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
  document.getElementById('hide-interpreter').addEventListener('change', function (e) {
    tree = e.target.checked ? pythonTree : fullTree;
    zoomed = zoomed ? findNode(tree, zoomed.name) : null;
    drawFlame();
  });
  window.addEventListener('resize', drawFlame);
  drawOutOfMemory();
  drawFlame();
  drawTimeline();
  drawSites();
  document.body.setAttribute('data-rendered', 'yes');
})();
