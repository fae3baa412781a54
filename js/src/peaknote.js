// One line under the memory breakdown saying where the memory peak happened ("Peak 412 MiB,
// in backward of layer3.1.conv2 (convolution)"), from the report's peak_place; while a drag
// predicts another batch size it gives the predicted peak there and, where the memory curve's
// lines carry the phase of the step they follow (profiler/phases.py), the phase predicted to
// hold it. Text only.
import { h } from "./dom.js";
import { formatBytes } from "./format.js";

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
  const where = peakPlaceText(report.peak_place);

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
    let phase = null;
    try {
      phase = predictor?.peakPhaseAt?.(batch) ?? null;
    } catch {
      phase = null; // no memory model: the predicted bytes say all there is
    }
    return phase ? `, in ${phaseWords(phase)}` : "";
  }

  return { el, update };
}
