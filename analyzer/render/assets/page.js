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

  // The page's tree names each node by an index into `names` (each name once): the tree with the
  // names in their place.
  function namedTree(node, names) {
    node.name = names[node.name];
    for (var i = 0; i < node.children.length; ++i) namedTree(node.children[i], names);
    return node;
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
    return mergedNode(node.name, [node]);
  }

  // One node standing for `nodes` (of one name, their metrics summed), whose children are those
  // of them all, an interpreter frame replaced by its own children, those of one name merged in
  // turn. Each node is visited once: merging siblings again at each level (as this did before)
  // cost a deep chain below K merged callers K times its depth, again at every level.
  function mergedNode(name, nodes) {
    var out = {name: name, children: []};
    TREE_METRICS.forEach(function (m) {
      out[m] = 0;
      nodes.forEach(function (n) { out[m] += n[m]; });
    });
    // A Map: a frame may be named anything, "__proto__" too.
    var groups = new Map();
    function gather(child) {
      if (child.interpreter) {
        child.children.forEach(gather);
        return;
      }
      if (!groups.has(child.name)) groups.set(child.name, []);
      groups.get(child.name).push(child);
    }
    nodes.forEach(function (n) { n.children.forEach(gather); });
    var names = Array.from(groups.keys());
    names.sort(function (a, b) { return a < b ? -1 : a > b ? 1 : 0; });
    out.children = names.map(function (childName) { return mergedNode(childName, groups.get(childName)); });
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
  // #metric=live|peak|total&search=REGEX&zoom=FUNCTION&interpreter=show|hide&view=growing|live|peak;
  // the last of a repeated key counts.
  function parseHash(hash) {
    var view = {};
    hash.replace(/^#/, '').split('&').forEach(function (part) {
      var kv = part.split('=');
      var value;
      try {
        value = decodeURIComponent(kv[1] || '');
      } catch (malformed) {  // a stray '%' in a link: that key is ignored, the page still opens
        return;
      }
      if (kv[0] === 'search') view.search = value;
      if (kv[0] === 'zoom') view.zoom = value;
      if (kv[0] === 'view') view.view = value;
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


  // The stacked step chart of live bytes by site: each series' layer, its bottom and top at each
  // history slot (negative values, which a series never has, count as nothing).
  function stackSeries(series) {
    var layers = [];
    var base = series.length > 0 ? series[0].values.map(function () { return 0; }) : [];
    series.forEach(function (s) {
      var top = base.map(function (b, k) { return b + Math.max(0, s.values[k]); });
      layers.push({bottom: base, top: top});
      base = top;
    });
    return layers;
  }
  // An SVG path of the band between bottom[k] and top[k], each held from times[k] until times[k + 1]
  // (the last until `end`): steps, never straight lines between samples.
  function stepBandPath(times, bottom, top, end, x, y) {
    var n = times.length;
    var d = 'M' + x(times[0]).toFixed(1) + ' ' + y(top[0]).toFixed(1);
    for (var k = 1; k < n; ++k) d += 'H' + x(times[k]).toFixed(1) + 'V' + y(top[k]).toFixed(1);
    d += 'H' + x(end).toFixed(1) + 'V' + y(bottom[n - 1]).toFixed(1);
    for (k = n - 1; k > 0; --k) d += 'H' + x(times[k]).toFixed(1) + 'V' + y(bottom[k - 1]).toFixed(1);
    return d + 'H' + x(times[0]).toFixed(1) + 'Z';
  }
  // The trace window's allocations as bands over their lifetimes, stacked without addresses as in
  // PyTorch's active-memory timeline: at any time the live bands lie on the summed band of those not
  // drawn (`other`, [time, bytes] steps) in allocation order, so a free lets the bands above it
  // down. `bands`: [alloc time, free time or null (live at `end`), bytes, stack] in allocation order.
  // Returns each band's bottom over its lifetime as [time, bytes] steps (empty for a band freed as it
  // was made) and the most bytes stacked at any time.
  function bandLayout(bands, other, end) {
    function freed(band) { return band[1] === null ? end : band[1]; }
    var times = [];
    bands.forEach(function (band) { times.push(band[0], freed(band)); });
    other.forEach(function (point) { times.push(point[0]); });
    times.sort(function (a, b) { return a - b; });
    var bottoms = bands.map(function () { return []; });
    var live = [], next = 0, below = 0, at = 0, most = 0;
    for (var i = 0; i < times.length; ++i) {
      var t = times[i];
      if (i > 0 && t === times[i - 1]) continue;
      while (at < other.length && other[at][0] <= t) below = other[at++][1];
      live = live.filter(function (b) { return freed(bands[b]) > t; });
      for (; next < bands.length && bands[next][0] <= t; ++next) {
        if (freed(bands[next]) > t) live.push(next);
      }
      var offset = below;
      live.forEach(function (b) {
        var steps = bottoms[b];
        if (steps.length === 0 || steps[steps.length - 1][1] !== offset) steps.push([t, offset]);
        offset += bands[b][2];
      });
      most = Math.max(most, offset);
    }
    return {bottoms: bottoms, most: most};
  }
  // The view the page opens on: the address's (#view=growing|live|peak), else the report's best.
  function openingView(reportView, hashView) {
    return hashView === 'growing' || hashView === 'live' || hashView === 'peak' ? hashView : reportView;
  }
  // The line over the trace's bands: what is drawn, and what is not.
  function bandsNote(trace) {
    var drawn = trace.bands.length;
    var note = trace.allocations.toLocaleString('en') + ' allocations in the trace window (' +
        trace.start.toFixed(3) + ' s to ' + trace.end.toFixed(3) + ' s after the start)';
    note += drawn < trace.allocations
        ? '; the ' + drawn.toLocaleString('en') + ' that held the most bytes for the longest (bytes \u00d7 lifetime) are drawn as bands, the other ' +
          (trace.allocations - drawn).toLocaleString('en') + ' summed in the grey band at the bottom.'
        : ', each drawn as a band.';
    if (trace.before_window > 0) {
      note += ' ' + trace.before_window.toLocaleString('en') + ' made before the window and freed in it start at its start;' +
          ' those made before it and still live are not drawn.';
    }
    return note;
  }

  if (typeof module === 'object' && module.exports) {
    module.exports = {
      bytes: bytes, color: color, namedTree: namedTree, linkParents: linkParents, findNode: findNode,
      searchPattern: searchPattern, flameFrames: flameFrames, frameTitle: frameTitle,
      frameLabel: frameLabel, flameStatus: flameStatus, timelineScale: timelineScale,
      timelineArea: timelineArea, segmentSpans: segmentSpans, segmentMapNote: segmentMapNote,
      parseHash: parseHash, withoutInterpreter: withoutInterpreter, initialMetric: initialMetric,
      stackSeries: stackSeries, stepBandPath: stepBandPath, bandLayout: bandLayout,
      openingView: openingView, bandsNote: bandsNote
    };
    return;
  }

  // The page.
  var SVG = 'http://www.w3.org/2000/svg';
  var data = JSON.parse(document.getElementById('report-data').textContent);
  var metric = 'bytes_at_peak';  // a metric's key in the tree's nodes
  var zoomed = null;
  var fullTree = namedTree(data.tree, data.tree_names);
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

  // Appends a cell per text to a table row.
  function appendTextCells(row, texts) {
    texts.forEach(function (text) {
      var td = document.createElement('td');
      td.textContent = text;
      row.appendChild(td);
    });
  }
  // A stack as a list, innermost frame first.
  function frameList(frames) {
    var list = document.createElement('ol');
    frames.forEach(function (frame) {
      var item = document.createElement('li');
      item.textContent = frame;
      list.appendChild(item);
    });
    return list;
  }

  function drawSites() {
    var body = document.querySelector('#sites tbody');
    data.sites.forEach(function (site, i) {
      var row = document.createElement('tr');
      var cells = [String(i + 1), bytes(site.v[0]), bytes(site.v[1]), site.live_count.toLocaleString('en'),
                   bytes(site.v[3]), site.v[2].toLocaleString('en'), site.kind];
      appendTextCells(row, cells);
      var cell = document.createElement('td');
      cell.className = 'site';
      var details = document.createElement('details');
      var summary = document.createElement('summary');
      summary.textContent = site.label !== null ? site.label : '[no stack]';
      details.appendChild(summary);
      site.stacks.forEach(function (stack) {
        details.appendChild(frameList(stack));
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


  // A chart over time (the sites' history, the trace's bands): its axes, from t0 to t1 seconds after
  // the start and from 0 to ymax bytes; returns the pixel scales.
  var CHART = {height: 280, left: 78, right: 16, top: 14, bottom: 30};
  function chartAxes(svg, t0, t1, ymax) {
    var W = Math.max(Math.round(svg.getBoundingClientRect().width), 300) || 1200;
    var H = CHART.height, L = CHART.left, R = CHART.right, T = CHART.top, B = CHART.bottom;
    if (t1 <= t0) t1 = t0 + 1;
    if (ymax <= 0) ymax = 1;
    svg.setAttribute('viewBox', '0 0 ' + W + ' ' + H);
    svg.setAttribute('height', H);
    var scale = {
      x: function (t) { return L + (W - L - R) * (t - t0) / (t1 - t0); },
      y: function (v) { return H - B - (H - B - T) * v / ymax; },
      t0: t0, t1: t1, top: T, bottom: H - B
    };
    for (var k = 0; k <= 4; ++k) {
      var v = ymax * k / 4, y = scale.y(v);
      el('line', {x1: L, x2: W - R, y1: y, y2: y, stroke: '#eee'}, svg);
      el('text', {x: L - 6, y: y + 4, 'text-anchor': 'end'}, svg).textContent = bytes(Math.round(v));
      var t = t0 + (t1 - t0) * k / 4;
      el('text', {x: scale.x(t), y: H - 10, 'text-anchor': k === 0 ? 'start' : k === 4 ? 'end' : 'middle'}, svg)
          .textContent = t.toFixed(t1 - t0 < 10 ? 2 : 1) + ' s';
    }
    return scale;
  }

  var MARKER_COLORS = {flush: '#1f7a3d', trim: '#16a085', oom: '#c0392b', report: '#555'};
  function drawMarkers(svg, scale) {
    data.markers.forEach(function (marker) {
      if (marker.time < scale.t0 || marker.time > scale.t1) return;
      var x = scale.x(marker.time);
      var g = el('g', {'class': 'marker marker-' + marker.type}, svg);
      el('line', {x1: x, x2: x, y1: scale.top, y2: scale.bottom, stroke: MARKER_COLORS[marker.type],
                  'stroke-width': 1.5, 'stroke-dasharray': marker.type === 'report' ? '2 2' : '5 3'}, g);
      el('rect', {x: x - 4, y: scale.top, width: 8, height: scale.bottom - scale.top, fill: 'transparent'}, g);
      el('title', {}, g).textContent = marker.text + ' at ' + marker.time.toFixed(3) + ' s';
    });
  }

  // The panel under a chart that shows what was clicked: a title and stacks, innermost frame first.
  function showDetail(panel, title, stacks, more) {
    while (panel.firstChild) panel.removeChild(panel.firstChild);
    var head = document.createElement('p');
    head.className = 'detail-title';
    head.textContent = title;
    panel.appendChild(head);
    stacks.forEach(function (stack) {
      panel.appendChild(frameList(stack));
    });
    if (more > 0) {
      var note = document.createElement('p');
      note.className = 'hint';
      note.textContent = 'and ' + more + ' more stacks';
      panel.appendChild(note);
    }
    panel.hidden = false;
  }

  function seriesColor(name) { return name === null ? '#c8c8c8' : color(name); }

  function drawHistory() {
    var svg = document.getElementById('history');
    var note = document.getElementById('history-note');
    var history = data.history;
    if (history === null || history.times.length === 0) {
      note.textContent = history === null
          ? 'This report has no history of its sites (VRAMSHIM_HISTORY=off, a merged report, or a report of an older vramshim).'
          : 'The history has no samples yet.';
      svg.hidden = true;
      return;
    }
    var times = history.times;
    var layers = stackSeries(history.series);
    var ymax = 0;
    if (layers.length > 0) layers[layers.length - 1].top.forEach(function (v) { ymax = Math.max(ymax, v); });
    var end = Math.max(times[times.length - 1], data.markers.length ? data.markers[data.markers.length - 1].time : 0);
    var scale = chartAxes(svg, Math.min(0, times[0]), end, ymax);
    var legend = document.getElementById('history-legend');
    var detail = document.getElementById('history-detail');
    history.series.forEach(function (series, i) {
      var name = series.name + (series.kind && series.kind !== 'device' ? ' [' + series.kind + ']' : '');
      var g = el('g', {'class': 'series'}, svg);
      var path = el('path', {d: stepBandPath(times, layers[i].bottom, layers[i].top, end, scale.x, scale.y),
                             fill: seriesColor(series.color), stroke: '#fff', 'stroke-width': 0.4}, g);
      var most = 0;
      series.values.forEach(function (v) { most = Math.max(most, v); });
      el('title', {}, g).textContent = name + '\nat most ' + bytes(most) + ', ' +
          bytes(series.values[series.values.length - 1]) + ' at the end';
      path.addEventListener('click', function () {
        showDetail(detail, name + ': at most ' + bytes(most), series.stacks, series.stack_count - series.stacks.length);
      });
      var item = document.createElement('span');
      var swatch = document.createElement('span');
      swatch.className = 'swatch';
      swatch.style.background = seriesColor(series.color);
      item.appendChild(swatch);
      item.appendChild(document.createTextNode(name));
      legend.appendChild(item);
    });
    drawMarkers(svg, scale);
    el('line', {x1: scale.x(scale.t0), x2: scale.x(end), y1: scale.y(0), y2: scale.y(0), stroke: '#999'}, svg);
    var named = history.series.filter(function (series) { return series.color !== null; }).length;
    var text = 'Live bytes of the ' + named + ' of ' + history.labels.toLocaleString('en') + ' sites that held the most' +
        (named < history.labels ? ', and of all the others together (grey)' : '') +
        ', stacked, at each of the history\'s ' + times.length + ' samples, held until the next.';
    if (history.untracked_sites > 0) text += ' ' + history.untracked_sites + ' sites beyond the history\'s budget are in none.';
    note.textContent = text + ' Hover for a site\'s name, click for its stacks.';
  }

  function drawBands() {
    var svg = document.getElementById('bands');
    var note = document.getElementById('bands-note');
    var trace = data.trace;
    if (trace === null) {
      note.textContent = 'This report has no allocations in its trace (VRAMSHIM_TRACE=off, a merged report, or a report of an older vramshim).';
      svg.hidden = true;
      return;
    }
    note.textContent = bandsNote(trace) + ' Height is bytes; older allocations lie below newer ones. Hover for a band\'s site, click for its stack.';
    var layout = bandLayout(trace.bands, trace.other, trace.end);
    var scale = chartAxes(svg, trace.start, trace.end, layout.most);
    var detail = document.getElementById('bands-detail');
    if (trace.other.length > 0) {
      var others = trace.other;
      var zeros = others.map(function () { return 0; });
      var tops = others.map(function (p) { return p[1]; });
      var g = el('g', {'class': 'band-other'}, svg);
      el('path', {d: stepBandPath(others.map(function (p) { return p[0]; }), zeros, tops, trace.end, scale.x, scale.y),
                  fill: '#c8c8c8'}, g);
      el('title', {}, g).textContent = 'the allocations not drawn as bands of their own';
    }
    trace.bands.forEach(function (band, i) {
      var steps = layout.bottoms[i];
      if (steps.length === 0) return;
      var stack = trace.stacks[band[3]];
      var end = band[1] === null ? trace.end : band[1];
      var g = el('g', {'class': 'band'}, svg);
      var path = el('path', {d: stepBandPath(steps.map(function (p) { return p[0]; }),
                                             steps.map(function (p) { return p[1]; }),
                                             steps.map(function (p) { return p[1] + band[2]; }), end, scale.x, scale.y),
                             fill: seriesColor(stack.color), stroke: '#fff', 'stroke-width': 0.3}, g);
      var life = band[1] === null ? 'live at the report' : 'freed at ' + band[1].toFixed(3) + ' s';
      el('title', {}, g).textContent = stack.name + '\n' + bytes(band[2]) + ', from ' + band[0].toFixed(3) + ' s, ' + life;
      path.addEventListener('click', function () {
        var frames = stack.frames.map(function (f) { return trace.frame_names[f]; });
        showDetail(detail, stack.name + ': ' + bytes(band[2]) + ', from ' + band[0].toFixed(3) + ' s, ' + life, [frames], 0);
      });
    });
    drawMarkers(svg, scale);
  }

  function drawGrowing() {
    var growing = data.growing;
    var note = document.getElementById('growing-note');
    var body = document.querySelector('#growing tbody');
    // Sites beyond the history's budget: whether they grow cannot be told.
    var untracked = growing.untracked_sites > 0
        ? 'growth cannot be told for ' + growing.untracked_sites.toLocaleString('en') + (growing.untracked_sites === 1 ? ' site' : ' sites') +
          ' beyond what the history\'s budget holds (VRAMSHIM_HISTORY): they have no history.'
        : '';
    if (!growing.has_history) {
      note.textContent = 'This report has no history of its sites, so growth cannot be told.';
    } else if (growing.sites.length === 0) {
      note.textContent = untracked ? 'No site with a history grew steadily until the report; ' + untracked : 'No site grew steadily until the report.';
    } else {
      var p = growing.pattern;
      note.textContent = (p !== null
          ? 'Repeating allocation pattern: a step every ' + (p.step_seconds < 1 ? (p.step_seconds * 1000).toFixed(1) + ' ms' : p.step_seconds.toFixed(1) + ' s') +
            ', ' + p.allocations_per_step + ' allocations per step (' + p.steps + ' steps in the last ' +
            p.allocations_searched.toLocaleString('en') + ' allocations of the trace).'
          : 'No repeating allocation pattern in the trace: rates are per second only.') +
          ' Steadiness is R\u00b2 of a straight line through the site\'s live bytes since it began to grow. Click a site for its stack.' +
          (untracked ? ' G' + untracked.slice(1) : '');
    }
    document.getElementById('growing').hidden = growing.sites.length === 0;
    growing.sites.forEach(function (site, i) {
      var row = document.createElement('tr');
      appendTextCells(row, [String(i + 1), '+' + bytes(site.gained),
                            bytes(Math.round(site.per_second)) + '/s',
                            site.per_step === null ? '-' : bytes(Math.round(site.per_step)),
                            site.steadiness.toFixed(3), site.since.toFixed(1) + ' s',
                            bytes(site.final), site.kind]);
      var cell = document.createElement('td');
      cell.className = 'site';
      var details = document.createElement('details');
      var summary = document.createElement('summary');
      var swatch = document.createElement('span');
      swatch.className = 'swatch';
      swatch.style.background = seriesColor(site.color);
      summary.appendChild(swatch);
      summary.appendChild(document.createTextNode(site.name));
      details.appendChild(summary);
      details.appendChild(frameList(site.frames));
      cell.appendChild(details);
      row.appendChild(cell);
      body.appendChild(row);
    });
  }

  // Shows a view: its sections first, the flame graph by its metric.
  var VIEW_ORDER = {
    growing: ['growing-section', 'history-section', 'flame-section', 'timeline-section', 'trace-section', 'sites-section'],
    live: ['flame-section', 'sites-section', 'history-section', 'timeline-section', 'trace-section', 'growing-section'],
    peak: ['flame-section', 'timeline-section', 'sites-section', 'history-section', 'trace-section', 'growing-section']
  };
  function showView(name) {
    document.body.setAttribute('data-view', name);
    var main = document.getElementById('views-body');
    VIEW_ORDER[name].forEach(function (id) { main.appendChild(document.getElementById(id)); });
    var buttons = document.querySelectorAll('#views button');
    for (var i = 0; i < buttons.length; ++i) {
      buttons[i].className = buttons[i].getAttribute('data-view') === name ? 'current' : '';
    }
  }

  var view = parseHash(location.hash);
  if (view.search !== undefined) document.getElementById('search').value = view.search;
  if (view.interpreter === 'show') tree = fullTree;
  document.getElementById('hide-interpreter').checked = tree === pythonTree;
  if (view.zoom !== undefined) zoomed = findNode(tree, view.zoom);
  var opening = openingView(data.view, view.view);
  metric = initialMetric(opening !== 'peak', tree, view);
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
  var viewButtons = document.querySelectorAll('#views button');
  for (i = 0; i < viewButtons.length; ++i) {
    viewButtons[i].addEventListener('click', function (e) {
      var name = e.target.getAttribute('data-view');
      showView(name);
      metric = name === 'peak' ? 'bytes_at_peak' : 'live_bytes';
      var radio = document.querySelector('input[name=metric][value="' + metric + '"]');
      if (radio) radio.checked = true;
      drawFlame();
    });
  }
  showView(opening);
  drawOutOfMemory();
  drawFlame();
  drawTimeline();
  drawSites();
  drawGrowing();
  drawHistory();
  drawBands();
  document.body.setAttribute('data-rendered', 'yes');
})();
