// One line under the memory breakdown saying where the memory peak happened ("Peak 412 MiB,
// in backward of layer3.1.conv2 (convolution)"), from the report's peak_place; while a drag
// predicts another batch size it gives the predicted peak there. Text only.
import { h } from "./dom.js";
import { formatBytes } from "./format.js";

const OPTIMIZER_PATH = "[optimizer]";

/** Where the peak happened, in words, or "" when the report does not say. */
export function peakPlaceText(place) {
  if (!place || typeof place.phase !== "string") return "";
  if (place.phase === "optimizer" || place.module === OPTIMIZER_PATH) return "in the optimizer step";
  const where = place.module ? place.module : "code outside the model's modules";
  const op = place.op ? ` (${place.op})` : "";
  return `in ${place.phase} of ${where}${op}`;
}

export function createPeakNote({ report }) {
  const el = h("div", { class: "sk-peak-note", data: { skyline: "peak-note" } });
  const where = peakPlaceText(report.peak_place);

  function update(scale) {
    if (!where) {
      el.hidden = true;
      return;
    }
    el.hidden = false;
    el.textContent = scale?.predicted && Number.isFinite(scale.peakBytes)
      ? `Predicted peak ${formatBytes(scale.peakBytes)} at batch size ${scale.batch}; measured peak ${where}`
      : `Peak ${formatBytes(Number(report.peak_bytes) || 0)}, ${where}`;
  }

  return { el, update };
}
