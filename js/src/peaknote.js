// One line under the memory breakdown saying where the memory peak happened ("Peak 412 MiB,
// in backward of layer3.1.conv2 (convolution)"), from the report's peak_place; while a drag
// predicts another batch size it gives the predicted peak there and, where the memory curve's
// lines carry the phase of the step they follow (profiler/phases.py), the phase predicted to
// hold it, or the phases whose lines lie within predict.js PHASE_TIE of it there (two lines
// 0.08 % apart in slope once named the forward at 512 while every sample peaked in backward).
// Text only.
//
// peak_place is where the tensors alive peaked (profiler/peak.py follows storages); the peak's
// bytes and its phases are the allocator's, which also counts what kernels allocate for
// themselves. When a kernel's workspace makes the allocator peak in another phase (the example
// LSTM at 8 on CPU: the LSTM's backward with its workspace, 15.3 MiB, while the tensors alone
// peak in log-softmax's backward, 14.7 MiB), the line names the allocator's phase and says where
// the tensors alone peaked, rather than putting the peak's bytes in the wrong place.
import { h } from "./dom.js";
import { formatBytes } from "./format.js";
import { num } from "./numbers.js";
import { PHASE_TIE } from "./predict.js";

const OPTIMIZER_PATH = "[optimizer]";

// The phases of a step as profiler/phases.py splits it.
const PHASE_WORDS = {
  forward: "the model's forward",
  loss: "the loss and its backward",
  backward: "the model's backward",
  optimizer: "the optimizer step",
};

/** A phase's name in words (an unknown one as it is). */
export const phaseWords = (phase) => PHASE_WORDS[phase] ?? String(phase);

/** The phase holding the largest of a sample's peak_by_phase, or null. */
export function peakPhase(byPhase) {
  if (!byPhase || typeof byPhase !== "object") return null;
  let best = null;
  for (const [name, bytes] of Object.entries(byPhase)) {
    if (Number.isFinite(num(bytes)) && (best === null || num(bytes) > num(byPhase[best]))) best = name;
  }
  return best;
}

/**
 * The allocator's phase (profiler/phases.py) a peak_place falls in: the model's modules'
 * forward or backward, the backward of code outside them is the loss's, the optimizer step its
 * own; null where it cannot say (code outside the modules in forward: before the model's
 * forward or in the loss).
 */
export function placePhase(place) {
  if (!place || typeof place.phase !== "string") return null;
  if (place.phase === "optimizer" || place.module === OPTIMIZER_PATH) return "optimizer";
  if (!place.module) return place.phase === "backward" ? "loss" : null;
  return place.phase === "forward" || place.phase === "backward" ? place.phase : null;
}

/** Where the measured peak happened, in words (see the file's note), or "". */
export function measuredPeakText(report) {
  const where = peakPlaceText(report?.peak_place);
  if (!where) return "";
  const own = Array.isArray(report.samples)
    ? report.samples.find((s) => num(s?.batch_size) === num(report.batch_size)) : null;
  const counted = peakPhase(own?.peak_by_phase);
  const placed = placePhase(report.peak_place);
  if (counted === null || placed === null || counted === placed) return where;
  return `in ${phaseWords(counted)} (kernel workspaces included; the tensors alone peak ${where})`;
}

/** Where the peak happened, in words, or "" when the report does not say. */
export function peakPlaceText(place) {
  if (!place || typeof place.phase !== "string") return "";
  if (place.phase === "optimizer" || place.module === OPTIMIZER_PATH) return "in the optimizer step";
  const where = place.module ? place.module : "code outside the model's modules";
  const op = place.op ? ` (${place.op})` : "";
  return `in ${place.phase} of ${where}${op}`;
}

export function createPeakNote({ report, predictor }) {
  const el = h("div", { class: "sk-peak-note", data: { skyline: "peak-note" } });
  const where = measuredPeakText(report);

  function update(scale) {
    if (!where) {
      el.hidden = true;
      return;
    }
    el.hidden = false;
    el.textContent = scale?.predicted && Number.isFinite(scale.peakBytes)
      ? `Predicted peak ${formatBytes(scale.peakBytes)} at batch size ${scale.batch}${predictedPhase(scale.batch)}; measured peak ${where}`
      : `Peak ${formatBytes(Number(report.peak_bytes) || 0)}, ${where}`;
  }

  function predictedPhase(batch) {
    let phases = [];
    try {
      phases = predictor?.peakPhasesAt?.(batch) ?? [];
    } catch {
      phases = []; // no memory model: the predicted bytes say all there is
    }
    if (phases.length < 2) return phases.length ? `, in ${phaseWords(phases[0])}` : "";
    // lines this close are one peak as far as the samples tell (predict.js PHASE_TIE)
    return `, in ${phases.map(phaseWords).join(" or ")} (their peaks within ${PHASE_TIE * 100}% of each other)`;
  }

  return { el, update };
}
