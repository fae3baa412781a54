// Source-line attribution for the code view: which lines of the user's cells/files the time and
// memory of the current drill level come from. Pure data, no DOM.
//
// A node's frames are the user-code part of the stack that produced it (the call sites in the
// model's forward, the training loop line, ...). Each leaf under the current level charges its
// time and activation bytes to every distinct line in its frames, i.e. lines get INCLUSIVE
// totals like a line profiler's: `loss = model(x)` carries the whole forward pass and
// `x = self.layer1(x)` only layer1's. Leaves without frames inherit their nearest framed
// ancestor's, so an op inside a torch module still lands on the user's call site. Each line
// also keeps what it ran per part of the level (the level's children as the bars draw them,
// groups of repeated calls included), so its marker names them as the segments do.

import { drawnCategories } from "./categories.js";
import { NODE_KIND, nodeLabel, nodeTime } from "./tree.js";

export const lineKey = (file, line) => `${file}\n${line}`;

function distinct(frames) {
  const seen = new Map();
  for (const f of frames || []) {
    if (f && f.file !== undefined && Number.isFinite(f.line)) seen.set(lineKey(f.file, f.line), f);
  }
  return seen;
}

/** The distinct frames of `node` and all its descendants: Map lineKey -> frame. */
function subtreeFrames(node) {
  const lines = new Map();
  const stack = [node];
  while (stack.length) {
    const n = stack.pop();
    for (const [key, frame] of distinct(n.frames)) lines.set(key, frame);
    stack.push(...(n.children || []));
  }
  return lines;
}

function entry(stats, key, frame) {
  let e = stats.get(key);
  if (!e) {
    e = { file: frame.file, line: frame.line, cellId: frame.cell_id ?? null, timeMs: 0, optimizerMs: 0, activationBytes: 0, weightBytes: 0, held: new Map(), parts: new Map(), saved: [] };
    stats.set(key, e);
  }
  return e;
}

/** Add a leaf's time (`optimizerMs` of it in the optimizer step) to `into`. */
function add(into, timeMs, optimizerMs) {
  into.timeMs += timeMs;
  into.optimizerMs += optimizerMs;
}

function partOf(parts, node) {
  if (!parts.has(node.path)) parts.set(node.path, { label: nodeLabel(node), timeMs: 0, optimizerMs: 0 });
  return parts.get(node.path);
}

/**
 * When an op's saved bytes were saved and freed (node.saved_span, on the memory run's clock; a
 * freed end of null: alive when the iteration ended): [start, end). Without one (an older
 * report) they count as alive throughout, so that a line's bytes are their sum, as before.
 */
function savedSpan(node) {
  const span = node.saved_span;
  if (!Array.isArray(span) || !Number.isFinite(span[0])) return [-Infinity, Infinity];
  return [span[0], Number.isFinite(span[1]) ? span[1] : Infinity];
}

/**
 * The most bytes of [start, end, bytes] entries alive at once: a line run in a loop whose runs
 * free what they saved before the next saves (gradient accumulation) holds one run's, not
 * their sum (an MLP's line over 4 micro-batches read 4× what it held).
 */
export function mostAtOnce(saved) {
  const events = saved.flatMap(([start, end, bytes]) => [[start, bytes], [end, -bytes]]);
  events.sort((a, b) => a[0] - b[0] || a[1] - b[1]); // at one tick, frees first
  let now = 0;
  let most = 0;
  for (const [, change] of events) {
    now += change;
    most = Math.max(most, now);
  }
  return most;
}

/** Does parameter `name` (as named_parameters names it) belong to the module at `path`? */
export function ownsParameter(path, name, isRoot) {
  return isRoot || name === path || name.startsWith(`${path}.`);
}

/**
 * Per-line totals within `node`: Map lineKey -> {file, line, cellId, timeMs, optimizerMs,
 * activationBytes, weightBytes, parts, saved}; optimizerMs is the part of timeMs the optimizer
 * step ran, whose time does not scale with the batch (tree.js scaledTime). activationBytes:
 * the most its ops held saved for backward at once (mostAtOnce over `saved`, their [start,
 * end, bytes]). `optimizer`: whether `node` is in the optimizer step (tree.js inOptimizer).
 * Weight bytes come from report.weights (frames = where the parameter was created), restricted
 * to parameters of this module. `parts` maps the path of each child of `node` that ran the
 * line to {label, timeMs, optimizerMs}.
 */
export function lineStats(node, weights, isRoot, optimizer = false) {
  const stats = new Map();
  const stack = [[node, node.frames || [], null, optimizer]];
  while (stack.length) {
    const [n, inherited, part, outer] = stack.pop();
    const frames = n.frames && n.frames.length ? n.frames : inherited;
    const inStep = outer || n.kind === NODE_KIND.OPTIMIZER;
    const children = n.children || [];
    if (children.length) {
      for (const c of children) stack.push([c, frames, part ?? c, inStep]);
      continue;
    }
    const time = nodeTime(n);
    const stepTime = inStep ? time : 0;
    const act = n.activation_bytes || 0;
    if (time === 0 && act === 0) continue;
    const span = savedSpan(n);
    for (const [key, frame] of distinct(frames)) {
      const e = entry(stats, key, frame);
      add(e, time, stepTime);
      if (act) e.saved.push([...span, act]);
      if (part) add(partOf(e.parts, part), time, stepTime);
    }
  }
  for (const e of stats.values()) e.activationBytes = mostAtOnce(e.saved);
  for (const w of weights || []) {
    if (!ownsParameter(node.path, w.name, isRoot)) continue;
    for (const [key, frame] of distinct(w.frames)) {
      entry(stats, key, frame).weightBytes += (w.bytes || 0) + (w.grad_bytes || 0);
    }
  }
  return stats;
}

/**
 * The categories held by a node of the level rather than by its ops (the optimizer's state):
 * [{node, label, bytes}] for each category that stands for a child of the root (at the root)
 * or for `node` itself (opened), with bytes at the peak.
 */
export function heldCategories(report, node, isRoot) {
  const holders = isRoot ? node.children || [] : [node];
  return drawnCategories(report).flatMap((c) => {
    const holder = c.nodeKind && c.bytes !== 0 ? holders.find((n) => n.kind === c.nodeKind) : null;
    return holder ? [{ node: holder, label: c.label, bytes: c.bytes }] : [];
  });
}

/**
 * Charge each held category (heldCategories) to the lines that ran its node (the line that
 * calls `optimizer.step()` for the optimizer's state): `held` maps label -> bytes per line.
 */
export function addHeld(stats, held) {
  for (const { node, label, bytes } of held) {
    for (const [key, frame] of subtreeFrames(node)) {
      const e = entry(stats, key, frame);
      e.held.set(label, (e.held.get(label) || 0) + bytes);
    }
  }
  return stats;
}

/**
 * The lines a breakdown segment comes from (for hover highlighting): the frames of its node and
 * all descendants; for a segment of a category held by parameters (weights), where its
 * parameters were created as well; for an "other" segment, the lines of its parts.
 */
export function segmentLines(segment, weights) {
  const keys = new Set();
  for (const part of segment.parts || []) for (const key of segmentLines(part, weights)) keys.add(key);
  if (!segment.node) return keys;
  for (const key of subtreeFrames(segment.node).keys()) keys.add(key);
  if (segment.spec?.parameterFields.length) {
    for (const w of weights || []) {
      if (ownsParameter(segment.path, w.name, false)) {
        for (const key of distinct(w.frames).keys()) keys.add(key);
      }
    }
  }
  return keys;
}

/** Sources (report.sources entries) that the given line stats point into, in report order. */
export function sourcesFor(sources, stats) {
  const files = new Set([...stats.values()].map((e) => e.file));
  return (sources || []).filter((s) => files.has(s.file));
}
