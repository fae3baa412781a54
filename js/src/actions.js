// Kernel actions: "Re-profile" and "Measure at N" (N = the batch size shown), sent as
// {kind, ...} messages (MESSAGES in js/shared/protocol.js) that skyline_nb/live.py dispatches,
// and the measurement that comes back in the `measurement` trait, shown beside the prediction for
// the same batch size, with the report it was measured against only (reportArrived).
// The buttons show for a live widget once its kernel's liveness is known (kernel.js): enabled
// while a kernel object answers; disabled, with the reason on one line, while none does (the
// kernel restarted, was shut down or is busy; the notebook was reopened). A hover or a click
// checks again first, so a kernel gone since is found out before a message is sent to nobody.
// While the kernel works for this widget (the `status` trait) they wait. Dragging needs none of
// this: the report carries what it needs.

import { MESSAGES } from "../shared/protocol.js";
import { h, setText } from "./dom.js";
import { formatBytes, formatPercent, formatThroughput } from "./format.js";
import { checkKernel, isLive, kernelLiveness, onLiveness } from "./kernel.js";

// The trait holds the kernel's latest result whatever report it was taken against: a new report
// (Re-profile) leaves it as it was, and the kernel may clear it or send it again. What it held
// when a report arrived was compared with an earlier report's prediction, so it is not shown
// with this one, even when sent again; a different result, measured since, is. Per model, as
// every view of it shows the same report (a view opened later too).
const inherited = new WeakMap(); // model -> measurementKey of the value held when its report arrived

/** The measurement's values as one string, to tell one result from another; null when none. */
function measurementKey(m) {
  if (!m || typeof m !== "object" || !Number.isFinite(m.batch_size)) return null;
  return JSON.stringify([m.batch_size, m.iteration_ms, m.peak_bytes, m.throughput]);
}

/** A new report arrived for `model`: the measurement it holds now is the old report's. */
export function reportArrived(model) {
  if (typeof model.get === "function") inherited.set(model, measurementKey(model.get("measurement")));
}

/** The measurement taken against the report shown, or null. */
function currentMeasurement(model) {
  const m = typeof model.get === "function" ? model.get("measurement") : null;
  const key = measurementKey(m);
  return key !== null && key !== inherited.get(model) ? m : null;
}

const TITLES = Object.freeze({
  reprofile: "Profile again at the measured batch size",
  measure: "Run the iteration at this batch size and compare with the prediction",
});

// Said of a busy machine's measurement whether it came out above or below the prediction ("so
// the measured time may be high" read as a contradiction beside "120% off" the fast way), and
// naming what counts as busy: on 2 cores a notebook's own server and browser make the steps of
// two torch threads wait.
const BUSY = "the machine was busy: most steps waited for a CPU (other programs' work, this "
  + "notebook's server and browser included), so on a quieter machine this step may run faster";

/**
 * What tells the comparison from noise: a machine busy while it measured (the time is the busy
 * machine's, and may be high), else how far apart the middle half of its timed steps lay
 * (Timing.spread). Null for a measurement from before the kernel sent either.
 */
function measuredNoise(m) {
  if (m.waited === true) return BUSY;
  const steps = Number(m.steps);
  if (!(steps > 1) || !Number.isFinite(Number(m.spread))) return null;
  return `the middle half of its ${steps} timed steps lay within ${formatPercent(Number(m.spread))} of each other`;
}

/**
 * What the report predicted for the measured batch size before the measurement (the kernel
 * keeps it: a measurement that joins the samples changes the report's curve); null for a
 * measurement from before the kernel sent it, whose report is still the one it was taken against.
 */
function predictedBefore(m) {
  const ms = Number(m.predicted_ms);
  const peak = Number(m.predicted_peak_bytes);
  if (m.predicted_ms == null || !(ms > 0) || !(peak > 0)) return null;
  return { throughput: (1000 * m.batch_size) / ms, peakBytes: peak };
}

export function createActions({ model, predictor, signal, getBatch, measuredBatch }) {
  // A widget made by hand (SkylineWidget(report=...)) has a kernel but nobody serving these
  // messages; the kernel side says so with its `live` trait.
  const live = isLive(model);
  const reprofile = h("button", { class: "sk-button", text: "Re-profile", data: { skyline: "reprofile" }, attrs: { type: "button" } });
  const measure = h("button", { class: "sk-button", data: { skyline: "measure" }, attrs: { type: "button" } });
  const result = h("div", { class: "sk-measurement", data: { skyline: "measurement" }, attrs: { "aria-live": "polite" } });
  const buttons = h("div", { class: "sk-action-buttons", attrs: { hidden: "" } }, [reprofile, measure]);
  const reason = h("div", { class: "sk-kernel-reason", data: { skyline: "kernel-reason" }, attrs: { role: "note", hidden: "" } });
  const el = h("div", { class: "sk-actions" }, live ? [buttons, reason, result] : [result]);
  const working = () => Boolean(model.get("status"));

  function showLiveness() {
    const { state, reason: why } = kernelLiveness(model);
    buttons.hidden = state === "unknown" || state === "waiting";
    for (const [name, button] of [["reprofile", reprofile], ["measure", measure]]) {
      button.disabled = state !== "live" || working();
      button.title = why || TITLES[name];
    }
    reason.hidden = !why;
    setText(reason, why);
  }

  let checking = null;
  /** Ask the kernel again (one check at a time); resolves true when a kernel object answered. */
  function recheck() {
    if (!working()) checking ??= checkKernel(model, signal).finally(() => { checking = null; });
    return (checking ?? Promise.resolve(kernelLiveness(model))).then(({ state }) => state === "live");
  }

  /** Send `message()` once the kernel answered again; else the reason shows instead. */
  function whenServed(message) {
    return async () => {
      const msg = message();
      if (!working() && await recheck()) model.send(msg);
    };
  }

  if (live) {
    onLiveness(model, showLiveness, signal);
    model.on("change:status", showLiveness);
    signal.addEventListener("abort", () => model.off?.("change:status", showLiveness));
    el.addEventListener("pointerenter", recheck, { signal });
    el.addEventListener("focusin", recheck, { signal });
    reprofile.addEventListener("click", whenServed(() => ({ kind: MESSAGES.REPROFILE })), { signal });
    measure.addEventListener("click", whenServed(() => ({ kind: MESSAGES.MEASURE, batch_size: getBatch() })), { signal });
    showLiveness();
  }

  function update() {
    const shown = getBatch();
    measure.textContent = `Measure at ${shown}`;
    // beside "Measure at 64" after a drag, which batch a re-profile measures (the measured one)
    reprofile.textContent = !(measuredBatch > 0) || shown === measuredBatch ? "Re-profile" : `Re-profile at ${measuredBatch}`;
    const m = currentMeasurement(model);
    result.replaceChildren();
    if (!m) return;
    const lines = [`Measured at ${m.batch_size}: ${formatThroughput(m.throughput)}, peak ${formatBytes(m.peak_bytes)}`];
    const before = predictedBefore(m);
    // another model's step (a class the providers use defined again): no prediction is of it
    if (m.other_model !== true && (before || predictor.canManipulate)) {
      const t = before ? before.throughput : predictor.predictThroughput(m.batch_size);
      const p = before ? before.peakBytes : predictor.predictPeakBytes(m.batch_size);
      lines.push(`predicted ${formatThroughput(t)} (${formatPercent((m.throughput - t) / t)} off), `
        + `${formatBytes(p)} (${formatPercent((m.peak_bytes - p) / p)} off)`);
      // faster than the curve lets any batch size be: its line is too steep for the step now
      // (unless the measurement joined it: the curve takes it in, or it was within the noise)
      const ceiling = predictor.asymptoticThroughput;
      if (ceiling && m.throughput > ceiling && m.joined !== true) {
        lines.push(`faster than the curve's ceiling (${formatThroughput(ceiling)} at any batch size): `
          + "the samples ran slower than this step; Re-profile to fit the curve anew");
      }
    }
    const noise = measuredNoise(m);
    if (noise) lines.push(noise);
    if (m.joined === true) {
      const again = m.waited === true ? " (Measure again when the machine is quieter: it replaces this one)" : "";
      const curve = m.curve_kept === true ? "within the curve's tolerance: the curve stays as it was" : `the time curve now goes through ${m.batch_size} too`;
      lines.push(`added to the samples: ${curve}${again}`);
    } else if (typeof m.not_joined === "string" && m.not_joined) {
      lines.push(`not added to the samples: ${m.not_joined}`);
    }
    for (const text of lines) result.append(h("div", { text }));
  }

  update();
  return { el, update };
}
