// The HTML page's layout and formatting functions (analyzer/render/assets/page.js), run under Node
// without a DOM: a changed result fails here before it shows in a browser.
// Usage: node page_js_test.js PATH/TO/page.js
'use strict';
const assert = require('node:assert/strict');
const path = require('node:path');
const test = require('node:test');

const page = require(path.resolve(process.argv[2]));

// A tree in the shape of `report --format json --tree`.
function node(name, bytesAtPeak, liveBytes, children = []) {
  return {name, bytes_at_peak: bytesAtPeak, live_bytes: liveBytes, total_count: 1,
          total_bytes: bytesAtPeak + liveBytes, children};
}
function sampleTree() {
  const tree = node('all', 1000, 400, [
    node('eval()', 250, 400),
    node('train()', 750, 0, [
      node('forward()', 500, 0),
      node('optimizer()', 249, 0),
      node('tiny()', 1, 0, [node('under_tiny()', 1, 0)]),
    ]),
  ]);
  page.linkParents(tree, null);
  return tree;
}
// Frames as [name, x, width, depth, ancestor, match], widths rounded to 0.01 px.
function summary(graph) {
  const round = (v) => Math.round(v * 100) / 100;
  return graph.frames.map((f) => [f.node.name, round(f.x), round(f.width), f.depth, f.ancestor, f.match]);
}

test('bytes: B below 1 KiB, then one decimal in the largest unit below 1024', () => {
  assert.equal(page.bytes(0), '0 B');
  assert.equal(page.bytes(1023), '1023 B');
  assert.equal(page.bytes(1024), '1.0 KiB');
  assert.equal(page.bytes(1536), '1.5 KiB');
  assert.equal(page.bytes(1048575), '1024.0 KiB');
  assert.equal(page.bytes(1.5 * 1024 ** 3), '1.5 GiB');
  assert.equal(page.bytes(3 * 1024 ** 5), '3072.0 TiB');
  assert.equal(page.bytes(-2048), '-2.0 KiB');
  assert.equal(page.bytes(-5), '-5 B');
});

test('namedTree: the page names each node by an index into the tree\'s names', () => {
  const tree = {name: 0, children: [{name: 1, children: [{name: 1, children: []}]}]};
  const named = page.namedTree(tree, ['all', 'f()']);
  assert.equal(named.name, 'all');
  assert.equal(named.children[0].name, 'f()');
  assert.equal(named.children[0].children[0].name, 'f()');
});

test('color: by name, Python frames blue, module+offset grey', () => {
  assert.equal(page.color('train_step()'), 'hsl(16,81%,64%)');
  assert.equal(page.color('forward (model.py)'), 'hsl(212,55%,65%)');
  assert.equal(page.color('libcuda.so.1+0x1a2b'), 'hsl(0,0%,71%)');
});

test('flameFrames: widths are shares of the root, children side by side in order', () => {
  const tree = sampleTree();
  const graph = page.flameFrames(tree, 'bytes_at_peak', 200, null);
  assert.deepEqual(summary(graph), [
    ['all', 0, 200, 0, false, false],
    ['eval()', 0, 50, 1, false, false],
    ['train()', 50, 150, 1, false, false],
    ['forward()', 50, 100, 2, false, false],
    ['optimizer()', 150, 49.8, 2, false, false],
    // tiny() is 0.2 px wide: left out with its callees
  ]);
  assert.equal(graph.rows, 4);
  assert.equal(graph.matched, 0);
});

test('flameFrames: frames with nothing under the metric are left out', () => {
  const graph = page.flameFrames(sampleTree(), 'live_bytes', 200, null);
  assert.deepEqual(summary(graph), [
    ['all', 0, 200, 0, false, false],
    ['eval()', 0, 200, 1, false, false],
  ]);
});

test('flameFrames: zoomed, the callers are full-width ancestors and the root fills the width', () => {
  const tree = sampleTree();
  const graph = page.flameFrames(page.findNode(tree, 'train()'), 'bytes_at_peak', 300, null);
  assert.deepEqual(summary(graph), [
    ['all', 0, 300, 0, true, false],
    ['train()', 0, 300, 1, false, false],
    ['forward()', 0, 200, 2, false, false],
    ['optimizer()', 200, 99.6, 2, false, false],
    ['tiny()', 299.6, 0.4, 2, false, false],
    ['under_tiny()', 299.6, 0.4, 3, false, false],
  ]);
  assert.equal(graph.rows, 4);
});

test('flameFrames: a match counts once, not again inside a matching caller', () => {
  const graph = page.flameFrames(sampleTree(), 'bytes_at_peak', 200, page.searchPattern('train|FORWARD|eval'));
  assert.deepEqual(graph.frames.filter((f) => f.match).map((f) => f.node.name),
                   ['eval()', 'train()', 'forward()']);
  assert.equal(graph.matched, 1000);
  const zoomed = page.flameFrames(page.findNode(sampleTree(), 'train()'), 'bytes_at_peak', 300,
                                  page.searchPattern('^all|tiny'));
  assert.deepEqual(zoomed.frames.filter((f) => f.match).map((f) => f.node.name),
                   ['all', 'tiny()', 'under_tiny()']);
  assert.equal(zoomed.matched, 1, 'a matching ancestor is not counted');
});

test('searchPattern: case-insensitive; empty or invalid is no search', () => {
  assert.equal(page.searchPattern(''), null);
  assert.equal(page.searchPattern('('), null);
  assert.ok(page.searchPattern('LEAK_in').test('leak_in_model_forward()'));
});

test('frameTitle, frameLabel, flameStatus', () => {
  const tree = sampleTree();
  assert.equal(page.frameTitle(page.findNode(tree, 'forward()'), tree, 'bytes_at_peak'),
               'forward()\n500 B (50.0% of all)');
  assert.equal(page.frameTitle(tree, node('empty', 0, 0), 'bytes_at_peak'), 'all\n1000 B (0.0% of all)');
  assert.equal(page.frameLabel('model_forward()', 30), null);
  assert.equal(page.frameLabel('model_forward()', 120), 'model_forward()');
  assert.equal(page.frameLabel('model_forward()', 80), 'model_forw\u2026');
  assert.equal(page.flameStatus(1024, null, null), '1.0 KiB in all sites');
  assert.equal(page.flameStatus(2048, 'train()', 512), '2.0 KiB in train(); matched 512 B (25.0%)');
  assert.equal(page.flameStatus(0, null, 0), '0 B in all sites; matched 0 B');
});

test('timelineScale and timelineArea: time across the plot, bytes up from its bottom', () => {
  const samples = [[10, 100, 50], [12, 300, 100], [14, 0, 0]];
  const scale = page.timelineScale(samples, 1094);  // margins: 78 px left, 16 right, 12 top, 30 bottom
  assert.deepEqual([scale.t0, scale.t1, scale.ymax], [10, 14, 400]);
  assert.deepEqual([scale.x(10), scale.x(12), scale.x(14)], [78, 578, 1078]);
  assert.deepEqual([scale.y(0), scale.y(200), scale.y(400)], [210, 111, 12]);
  assert.equal(page.timelineArea(samples, scale, (s) => s[1]),
               'M78.0 210.0 L78.0 160.5 L578.0 61.5 L1078.0 210.0 L1078.0 210.0 Z');
  const single = page.timelineScale([[5, 0, 0]], 400);
  assert.deepEqual([single.t0, single.t1, single.ymax, single.x(5)], [5, 6, 1, 78]);
});

test('segmentSpans: the listed blocks and the allocated bytes between them cover the segment', () => {
  const spans = (segment) => page.segmentSpans(segment).map((s) => [s.offset, s.size, s.state]);
  assert.deepEqual(spans({size: 100, blocks: [[10, 20, 'free'], [30, 5, 'pending'], [60, 40, 'free']]}), [
    [0, 10, 'used'], [10, 20, 'free'], [30, 5, 'pending'], [35, 25, 'used'], [60, 40, 'free'],
  ]);
  assert.deepEqual(spans({size: 64, blocks: []}), [[0, 64, 'used']]);
  assert.deepEqual(spans({size: 64, blocks: [[0, 64, 'free']]}), [[0, 64, 'free']]);
  assert.deepEqual(spans({size: 64, blocks: [[0, 16, 'free']]}), [[0, 16, 'free'], [16, 48, 'used']]);
});

test('segmentMapNote: how many of the segments the map shows', () => {
  assert.equal(page.segmentMapNote(0, 0), 'The pool held no segments.');
  assert.equal(page.segmentMapNote(1, 1), 'The pool\'s one segment.');
  assert.equal(page.segmentMapNote(4, 4), 'All 4 segments, in address order.');
  assert.equal(page.segmentMapNote(64, 100), 'The first 64 of 100 segments, in address order.');
});

test('parseHash: metric names, decoded values, the last repeated key', () => {
  assert.deepEqual(page.parseHash(''), {});
  assert.deepEqual(page.parseHash('#metric=live&search=leak_in&zoom=model_forward()'),
                   {metric: 'live_bytes', search: 'leak_in', zoom: 'model_forward()'});
  assert.deepEqual(page.parseHash('#metric=total&metric=bogus'), {metric: 'total_bytes'});
  assert.deepEqual(page.parseHash('#metric=constructor&metric=toString'), {});
  // A malformed escape (a stray '%') ignores that key instead of stopping the page.
  assert.deepEqual(page.parseHash('#search=%E0%A4%A&metric=live'), {metric: 'live_bytes'});
  assert.deepEqual(page.parseHash('#zoom=a%20b&zoom=c%2B%2B'), {zoom: 'c++'});
  assert.deepEqual(page.parseHash('#search='), {search: ''});
});

test('findNode and linkParents', () => {
  const tree = sampleTree();
  const forward = page.findNode(tree, 'forward()');
  assert.equal(forward.parent, page.findNode(tree, 'train()'));
  assert.equal(tree.parent, null);
  assert.equal(page.findNode(tree, 'missing()'), null);
});

test('withoutInterpreter: interpreter frames give way to their callees, equal names summed', () => {
  const interp = (name, peak, live, children) =>
    Object.assign(node(name, peak, live, children), {interpreter: true});
  const tree = node('all', 30, 6, [
    interp('_start', 30, 6, [
      interp('_PyEval_EvalFrameDefault', 30, 6, [
        node('main (train.py)', 20, 4, [
          interp('ffi_call', 20, 4, [node('cuMemAlloc_v2', 20, 4)]),
        ]),
        interp('PyObject_Call', 10, 2, [
          node('main (train.py)', 10, 2, [node('leaf (train.py)', 10, 2)]),
        ]),
      ]),
    ]),
  ]);
  const shown = page.withoutInterpreter(tree);
  const names = (n) => [n.name, n.bytes_at_peak, n.live_bytes, n.children.map(names)];
  assert.deepEqual(names(shown), ['all', 30, 6, [
    ['main (train.py)', 30, 6, [['cuMemAlloc_v2', 20, 4, []], ['leaf (train.py)', 10, 2, []]]],
  ]]);
  assert.equal(tree.children[0].name, '_start', 'the full tree is left as it was');
});

test('withoutInterpreter: frames of any name are summed, "__proto__" and "constructor" too', () => {
  const tree = node('all', 7, 0, [
    node('__proto__', 3, 0), node('constructor', 1, 0), node('__proto__', 2, 0),
    node('constructor', 1, 0),
  ]);
  const names = (n) => [n.name, n.bytes_at_peak, n.children.map(names)];
  assert.deepEqual(names(page.withoutInterpreter(tree)), ['all', 7, [
    ['__proto__', 5, []], ['constructor', 2, []],
  ]]);
});

test('initialMetric: leaks first when the report at exit held memory, the address wins', () => {
  const tree = node('all', 100, 40);
  assert.equal(page.initialMetric(false, tree, {}), 'bytes_at_peak');
  assert.equal(page.initialMetric(true, tree, {}), 'live_bytes');
  assert.equal(page.initialMetric(true, tree, {metric: 'total_bytes'}), 'total_bytes');
  assert.equal(page.initialMetric(false, node('all', 0, 40), {}), 'live_bytes');
});

test('stackSeries: each series lies on the ones before it', () => {
  const layers = page.stackSeries([{values: [1, 2, 0]}, {values: [5, 0, 3]}]);
  assert.deepEqual(layers, [
    {bottom: [0, 0, 0], top: [1, 2, 0]},
    {bottom: [1, 2, 0], top: [6, 2, 3]},
  ]);
  assert.deepEqual(page.stackSeries([]), []);
});

test('stepBandPath: values held until the next time, no straight lines between samples', () => {
  const id = (v) => v;
  assert.equal(page.stepBandPath([0, 10], [0, 1], [4, 6], 20, id, id),
               'M0.0 4.0H10.0V6.0H20.0V1.0H10.0V0.0H0.0Z');
  assert.equal(page.stepBandPath([5], [0], [3], 9, id, id), 'M5.0 3.0H9.0V0.0H5.0Z');
});

test('bandLayout: bands stack in allocation order and fall when one below them is freed', () => {
  // a: 10 B from 0 to 5; b: 20 B from 1, live at the end (8); c: 5 B from 2 to 6; the summed band
  // of the others holds 3 B from 4 on.
  const bands = [[0, 5, 10, 0], [1, null, 20, 0], [2, 6, 5, 0], [3, 3, 7, 0]];
  const layout = page.bandLayout(bands, [[4, 3]], 8);
  assert.deepEqual(layout.bottoms, [
    [[0, 0], [4, 3]],
    [[1, 10], [4, 13], [5, 3]],
    [[2, 30], [4, 33], [5, 23]],
    [],  // freed as it was made
  ]);
  assert.equal(layout.most, 38);
});

test('openingView: the address wins, else the report\'s own', () => {
  assert.equal(page.openingView('growing', undefined), 'growing');
  assert.equal(page.openingView('growing', 'peak'), 'peak');
  assert.equal(page.openingView('live', 'constructor'), 'live');
  assert.deepEqual(page.parseHash('#view=live&metric=peak'), {view: 'live', metric: 'bytes_at_peak'});
});

test('bandsNote: says how many bands are drawn and how many summed', () => {
  const trace = {allocations: 1500, start: 0.25, end: 4, before_window: 0, bands: new Array(1000)};
  assert.equal(page.bandsNote(trace),
               '1,500 allocations in the trace window (0.250 s to 4.000 s after the start); the 1,000 ' +
               'that held the most bytes for the longest (bytes \u00d7 lifetime) are drawn as bands, the ' +
               'other 500 summed in the grey band at the bottom.');
  assert.equal(page.bandsNote({allocations: 2, start: 0, end: 1, before_window: 1, bands: [1, 2]}),
               '2 allocations in the trace window (0.000 s to 1.000 s after the start), each drawn as a ' +
               'band. 1 made before the window and freed in it start at its start; those made before it ' +
               'and still live are not drawn.');
});
