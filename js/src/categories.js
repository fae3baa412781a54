// The memory categories a report carries (report.categories, defined once in
// skyline_nb/categories.py, where each descriptor field is explained). Every memory view reads
// them from here; nothing in the widget names a category, so a category added in Python is
// drawn, labelled, styled and scaled with no change here.

import { sum } from "./numbers.js";
import { peakPhase } from "./peaknote.js";

const COLOR = /^#[0-9a-fA-F]{6}$/;

/** A colour from the report, only if it is `#rrggbb` (it lands in a style property). */
export function safeColor(value) {
  return typeof value === "string" && COLOR.test(value) ? value : null;
}

/**
 * The categories the memory bar draws, in the report's order. A category shown with another
 * (`shown_with`) is not drawn on its own: it joins that category's segments, and the drawn
 * entry names both ("weights + grads"). Each entry: {key, label, members, nodeFields,
 * parameterFields, bytes, growsWithBatch, remainder, nodeKind, color, texture}.
 */
export function drawnCategories(report) {
  const all = Array.isArray(report?.categories) ? report.categories : [];
  return all.filter((c) => !c.shown_with).map((c) => {
    const members = [c, ...all.filter((m) => m.shown_with === c.key)];
    return {
      key: c.key,
      label: members.map((m) => m.label).join(" + "),
      members,
      nodeFields: members.map((m) => m.node_field).filter(Boolean),
      parameterFields: members.map((m) => m.parameter_field).filter(Boolean),
      bytes: members.reduce((acc, m) => acc + (Number(m.bytes) || 0), 0),
      growsWithBatch: Boolean(c.grows_with_batch),
      remainder: Boolean(c.remainder),
      nodeKind: c.node_kind ?? null,
      color: safeColor(c.color),
      texture: c.texture || "plain",
    };
  });
}

/** A category split over the tree is coloured by module; the others have their own colour. */
export const splitsOverTree = (category) => category.nodeFields.length > 0;

/** The keys of the categories some sample holds bytes of at its peak. */
export function sampledCategories(report) {
  const keys = new Set();
  for (const s of report.samples || []) {
    for (const [key, bytes] of Object.entries(s?.categories || {})) if (Number(bytes) > 0) keys.add(key);
  }
  return keys;
}

/**
 * {category key: bytes at `batch`}, from the samples' own categories (each sample's are those
 * of its peak), among the samples that peaked in `phase`, the phase the memory curve puts the
 * peak of `batch` in, where two did (else among all): between two of them, on the line through
 * both; beyond them, the nearest one's, its categories that grow with the batch scaled
 * together to the curve's `peakBytes` and the others as they were; none where only the
 * measured batch peaked in `phase` (its own breakdown scales, applyScale).
 *
 * A step whose peak moves from the optimizer's update at the measured batch to the backward at
 * larger ones has no activations at its measured peak: a line through the largest two samples
 * whatever their phase drew 1.08 MiB where the curve said 4.64 (a tabular model with Adam,
 * session 56). Beyond the samples no category follows its own line: within the backward, the
 * same model's gradients fell from 268 KiB at 256 to 5 KiB at 512 as its activations more than
 * doubled (the peak moved earlier in the backward), and those lines, the gradients' cut at 0,
 * drew 30.2 MiB at 4,096 where the curve said 26.7 (a sample at 4,096 in another profile read
 * 26.7, its activations 17,563,656 B; scaled here from 512, 17,554,000).
 */
export function categoriesAt(report, batch, phase, peakBytes) {
  const samples = (report.samples || [])
    .filter((s) => s && s.categories && Object.keys(s.categories).length && Number.isFinite(s.batch_size))
    .sort((a, b) => a.batch_size - b.batch_size);
  const same = samples.filter((s) => peakPhase(s.peak_by_phase) === phase);
  if (phase !== null && same.length === 1 && same[0].batch_size === Number(report.batch_size)) return {};
  const pool = phase !== null && same.length >= 2 ? same : samples;
  if (pool.length < 2) return {};
  const kept = (report.categories || []).filter((c) => !c.remainder);
  // a key a sample lacks (a report from before the category) is left to applyScale's rule
  const bytesOf = (sample, key) => (key in sample.categories ? Number(sample.categories[key]) : NaN);
  const known = (entries) => Object.fromEntries(entries.filter(([, bytes]) => Number.isFinite(bytes)));
  const above = pool.findIndex((s) => s.batch_size > batch);
  if (above > 0) { // between two samples: a convex mix, never negative
    const [low, high] = [pool[above - 1], pool[above]];
    const t = (batch - low.batch_size) / (high.batch_size - low.batch_size);
    return known(kept.map((c) => [c.key, bytesOf(low, c.key) * (1 - t) + bytesOf(high, c.key) * t]));
  }
  const nearest = above === 0 ? pool[0] : pool[pool.length - 1];
  const grows = kept.filter((c) => c.grows_with_batch);
  const fixed = sum(kept.filter((c) => !c.grows_with_batch), (c) => bytesOf(nearest, c.key) || 0);
  const growing = sum(grows, (c) => bytesOf(nearest, c.key) || 0);
  const factor = growing > 0 && peakBytes > fixed ? (peakBytes - fixed) / growing : batch / nearest.batch_size;
  return known(kept.map((c) => [c.key, bytesOf(nearest, c.key) * (c.grows_with_batch ? factor : 1)]));
}
