// Linear maps between a quantity and a position: the key-metric bars map samples/s or bytes to
// a fraction of the bar's height and back (the inverse turns a pointer position into a value).

export function clamp(x, lo, hi) {
  return Math.min(Math.max(x, lo), hi);
}

/**
 * y = r0 + (x − d0)·(r1 − r0)/(d1 − d0). A zero-width domain maps everything to r0 instead of
 * dividing by zero (a report whose maximum is 0 still renders, with empty bars).
 */
export function linearScale([d0, d1], [r0, r1]) {
  const span = d1 - d0;
  const k = span === 0 ? 0 : (r1 - r0) / span;
  const scale = (x) => r0 + (x - d0) * k;
  scale.invert = (y) => (k === 0 ? d0 : d0 + (y - r0) / k);
  scale.domain = [d0, d1];
  scale.range = [r0, r1];
  return scale;
}

/** The share of `value` in `total`, 0 when the total is 0 (never NaN in a style attribute). */
export function fraction(value, total) {
  return total > 0 && Number.isFinite(value) ? value / total : 0;
}

/** A CSS percentage for a fraction, clamped to [0, 100] so a bar never overflows its track. */
export function cssPercent(frac) {
  return `${(clamp(Number.isFinite(frac) ? frac : 0, 0, 1) * 100).toFixed(3)}%`;
}
