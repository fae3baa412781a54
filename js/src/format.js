// The one place where numbers become text. The report keeps raw units (ms as floats, bytes as
// integers); every label, tooltip and aria text in the widget goes through these functions so
// the same quantity always reads the same way. Output is locale-independent on purpose: tests
// and screenshots must not depend on the browser's language. Python's views print the same text
// (skyline_nb/export/units.py); tests/fixtures/format_cases.json holds the cases both check.

const MINUS = "\u2212"; // a real minus sign: negative untracked values must be visible as such
const EMPTY = "\u2014"; // em dash for "no value"

function isNumber(x) {
  return typeof x === "number" && Number.isFinite(x);
}

function signed(x, body) {
  return x < 0 ? MINUS + body(-x) : body(x);
}

// Three significant digits without exponent notation: 1.23, 12.3, 123, 1234.
function sig3(x) {
  if (x >= 100) return String(Math.round(x));
  if (x >= 10) return trimZero(x.toFixed(1));
  return trimZero(x.toFixed(2));
}

// Drop all-zero decimals ("2.00 ms" -> "2 ms") so a round value does not look more precise
// than the data it came from.
function trimZero(text) {
  return text.replace(/\.0+$/, "");
}

/** Group thousands with commas: 1234567 -> "1,234,567" (integers only). */
export function formatInt(n) {
  if (!isNumber(n)) return EMPTY;
  return signed(Math.round(n), (v) => String(v).replace(/\B(?=(\d{3})+(?!\d))/g, ","));
}

/** Milliseconds as "0 ms", "850 µs", "1.23 ms", "12.3 ms", "123 ms", "1.23 s". */
export function formatMs(ms) {
  if (!isNumber(ms)) return EMPTY;
  if (ms === 0) return "0 ms";
  return signed(ms, (v) => {
    // A value that rounds up to the next unit is shown in it ("1 ms", never "1000 µs").
    if (v >= 999.5) return `${sig3(v / 1000)} s`;
    if (v >= 0.9995) return `${sig3(v)} ms`;
    const us = v * 1000;
    return us >= 1 ? `${sig3(us)} \u00b5s` : `${trimZero(us.toFixed(3))} \u00b5s`;
  });
}

const IEC = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/** Bytes in IEC units (powers of 1024): "512 B", "1.5 KiB", "12.3 MiB", "7.81 GiB". */
export function formatBytes(bytes) {
  if (!isNumber(bytes)) return EMPTY;
  return signed(bytes, (v) => {
    let unit = 0;
    while (v >= 1024 && unit < IEC.length - 1) {
      v /= 1024;
      unit += 1;
    }
    // sig3 may round 1023.6 KiB up to "1024 KiB"; promote so the unit stays < 1024.
    if (unit > 0 && Math.round(v) >= 1024 && unit < IEC.length - 1) {
      v /= 1024;
      unit += 1;
    }
    return unit === 0 ? `${Math.round(v)} B` : `${sig3(v)} ${IEC[unit]}`;
  });
}

const SI = ["", "k", "M", "G", "T", "P", "E"];

/**
 * A count or rate in SI prefixes (powers of 1000), with an optional unit: "850", "1.23 k",
 * formatSi(4.56e10, "FLOP/s") -> "45.6 GFLOP/s". Values under 1 keep two decimals ("0.25").
 */
export function formatSi(value, unit = "") {
  if (!isNumber(value)) return EMPTY;
  return signed(value, (v) => {
    let prefix = 0;
    while (v >= 1000 && prefix < SI.length - 1) {
      v /= 1000;
      prefix += 1;
    }
    // sig3 may round 999.6 up to "1000"; promote so the number stays < 1000.
    if (Math.round(v) >= 1000 && prefix < SI.length - 1) {
      v /= 1000;
      prefix += 1;
    }
    const suffix = `${SI[prefix]}${unit}`;
    return suffix ? `${sig3(v)} ${suffix}` : sig3(v);
  });
}

/** Samples per second: "1,234 samples/s", "98.7 samples/s", "1.23 samples/s". */
export function formatThroughput(samplesPerS) {
  if (!isNumber(samplesPerS)) return samplesPerS === Infinity ? "\u221e samples/s" : EMPTY;
  return signed(samplesPerS, (v) => `${v >= 1000 ? formatInt(v) : sig3(v)} samples/s`);
}

/** A fraction (0.123) as a percentage ("12.3%"); tiny non-zero shares say "<0.1%". */
export function formatPercent(fraction) {
  if (!isNumber(fraction)) return EMPTY;
  return signed(fraction, (v) => {
    const pct = v * 100;
    if (pct > 0 && pct < 0.05) return "<0.1%";
    return `${pct >= 99.95 && pct < 100 ? "99.9" : pct.toFixed(1)}%`;
  });
}

/**
 * "file:line" for a frame. A cell's file is the kernel's opaque code name
 * (/tmp/ipykernel_1/123.py), so cells are named by a short prefix of their id instead.
 */
// IPython names cell code after a temp file (ipykernel) or `<ipython-input-N-…>`; without a
// cell id (a notebook run by nbclient, a console) that name means nothing to a reader.
const CELL_CODE_NAME = /(^<ipython-input-)|([\\/]ipykernel_\d+[\\/]\d+\.py$)/;

/** How to name where code lives: "cell 1a2b3c4d", "notebook cell" or the file path. */
export function formatSourceName(file, cellId) {
  if (cellId) return `cell ${String(cellId).slice(0, 8)}`;
  return CELL_CODE_NAME.test(String(file ?? "")) ? "notebook cell" : file;
}

export function formatFrame(frame) {
  if (!frame) return "";
  return `${formatSourceName(frame.file, frame.cell_id)}:${frame.line}`;
}
