// The headline numbers (measured, never predicted), the profiler's notes on them, and the error
// box. The progress while the kernel profiles is progress.js.

import { h } from "./dom.js";
import { formatBytes, formatInt, formatMs, formatThroughput } from "./format.js";
import { Predictor } from "./predict.js";

function stat(label, value, title, note = null) {
  // data-skyline="summary" items keep the plain "Label: value" text the smoke tests read; the
  // colon is hidden by CSS because the label sits above the value, and so is the separator
  // before a note, which sits below it.
  return h("div", { class: "sk-stat", data: { skyline: "summary" }, title }, [
    h("span", { class: "sk-stat-label", text: label }),
    h("span", { class: "sk-stat-sep", text: ": " }),
    h("span", { class: "sk-stat-value", text: value }),
    ...(note ? [h("span", { class: "sk-stat-sep", text: " \u00b7 " }), h("span", { class: "sk-stat-note", data: { skyline: "max-where" }, text: note })] : []),
  ]);
}

/**
 * The header's maximum throughput, with how it is known: "predicted at batch 256 ·
 * extrapolated" when the batch lies beyond the measured sizes, "predicted at batch 512, the
 * drag's end · extrapolated" when it is the range's top (8× the largest sample often is), or
 * "measured at batch 16" when a sample's throughput is the best. The bars' top is the same
 * number. The label said "(predicted)" until session 57, beside a note saying "measured".
 */
function maxThroughputStat(predictor, samples) {
  const label = "Max throughput";
  const value = predictor.maxThroughput;
  if (!value) return stat(label, "\u2014", predictor.reason || "no model");
  const range = `for batch sizes up to ${formatInt(predictor.maxBatchSize())}`;
  const at = predictor.maxThroughputBatchSize;
  if (at === null) {
    const best = bestSample(samples);
    const where = best === null ? "" : ` at batch ${formatInt(best)}`;
    return stat(label, formatThroughput(value), `the most throughput measured${where}; none predicted ${range} is higher`, `measured${where}`);
  }
  const batch = Math.round(at);
  const beyond = predictor.extrapolation(batch);
  // a maximum at the range's top is where the drag stops, not where the throughput peaks: read
  // as a best batch size, a BERT's "3,793 samples/s at batch 512" (8× its largest sample) was
  // measured at 2,471
  const end = batch === predictor.maxBatchSize() ? ", the drag's end" : "";
  const note = `predicted at batch ${formatInt(batch)}${end}${beyond ? " \u00b7 extrapolated" : ""}`;
  const title = `the most throughput predicted ${range}: at batch ${formatInt(batch)}${end ? ", where the drag range ends and the throughput still grows" : ""}${beyond ? `, ${beyond}; the samples do not reach it` : ""}`;
  return stat(label, formatThroughput(value), title, note);
}

/** The batch size of the sample with the most throughput (report.samples); null if none. */
function bestSample(samples) {
  let best = null;
  let most = 0;
  for (const s of Array.isArray(samples) ? samples : []) {
    const throughput = s.batch_size / s.iteration_ms;
    if (Number.isFinite(throughput) && throughput > most) [best, most] = [s.batch_size, throughput];
  }
  return best;
}

export function renderHeader(report) {
  const device = report.device || {};
  const deviceName = [device.name, device.kind && device.name !== device.kind ? `(${device.kind})` : null]
    .filter(Boolean).join(" ") || "unknown";
  // Recomputed like the bars (predict.js), so a stored value from an older report that can no
  // longer be trusted is never shown.
  const predictor = new Predictor(report.models);
  const items = [
    stat("Device", deviceName, device.capacity_bytes ? `capacity ${formatBytes(device.capacity_bytes)}` : undefined),
    stat("Batch size", formatInt(report.batch_size)),
    stat("Iteration", formatMs(report.iteration_ms)),
    oneThread(report),
    stat("Throughput", formatThroughput(report.throughput)),
    stat("Peak memory", formatBytes(report.peak_bytes)),
    maxThroughputStat(predictor, report.samples),
  ].filter(Boolean);
  return h("div", { class: "sk-header", data: { skyline: "header" } }, items);
}

/**
 * The step at one torch thread, beside the iteration at the user's threads: measured only when
 * the headline's steps waited for a busy CPU (report.one_thread), where one thread can run the
 * step many times faster. The notes say it in words; here it sits next to the number it
 * compares with. Null when not measured.
 */
function oneThread(report) {
  const one = report.one_thread;
  const ms = Number(one?.one_thread_ms);
  const iteration = Number(report.iteration_ms);
  if (!(ms > 0) || !Number.isFinite(ms) || !(iteration > 0)) return null;
  const speed = (iteration / ms).toFixed(1);
  return stat("At 1 thread", formatMs(ms),
    `the same step at one torch thread, timed because the machine was busy: ${speed}\u00d7 the speed at ${one.threads} threads`);
}

/**
 * What the profiler noticed about its own measurement (a NaN loss, time that did not settle,
 * samples timed while other processes kept the CPU busy, negative untracked time), as text, in
 * one line that opens: how many notes and the start of the first, the full texts inside, so the
 * notes never push the bars down. None: nothing is drawn.
 */
export function renderWarnings(report) {
  const warnings = Array.isArray(report.warnings) ? report.warnings.filter((w) => typeof w === "string" && w) : [];
  if (!warnings.length) return null;
  const count = warnings.length === 1 ? "Note on this measurement" : `${warnings.length} notes on this measurement`;
  return h("details", { class: "sk-warnings", data: { skyline: "warnings" }, attrs: { role: "note", "aria-label": "Measurement notes" } }, [
    h("summary", { class: "sk-warnings-summary" }, [
      h("span", { class: "sk-warnings-count", text: count }),
      h("span", { class: "sk-warnings-first", text: warnings[0], attrs: { "aria-hidden": "true" } }),
    ]),
    h("ul", { class: "sk-warnings-list" }, warnings.map((text) => h("li", { class: "sk-warning", text }))),
  ]);
}

export function renderEmpty() {
  return h("div", { class: "sk-empty", data: { skyline: "summary" }, text: "No profile yet." });
}

/**
 * Errors arrive as text from the kernel, often with a traceback: one line says what went wrong,
 * the rest folds into a details box so the widget stays readable.
 */
export function createError() {
  const el = h("div", { class: "sk-error", data: { skyline: "error" }, attrs: { role: "alert", hidden: "" } });
  return {
    el,
    set(message) {
      const text = String(message || "").trim();
      el.hidden = !text;
      el.replaceChildren();
      if (!text) return;
      const lines = text.split(/\r?\n/);
      // A Python traceback says what went wrong on its LAST line.
      const traceback = lines[0].startsWith("Traceback");
      const headline = traceback ? lines.filter((l) => l.trim()).pop() : lines[0];
      el.append(h("div", { class: "sk-error-message", text: headline }));
      if (lines.length > 1) {
        el.append(h("details", { class: "sk-error-details" }, [
          h("summary", { text: "Details" }),
          h("pre", { text: traceback ? text : lines.slice(1).join("\n") }),
        ]));
      }
    },
  };
}
