// Kernel actions: "Re-profile" and "Measure at N" (N = the batch size shown), sent as
// {kind, ...} messages (MESSAGES in js/shared/protocol.js) that skyline_nb/live.py dispatches,
// and the measurement that comes back in the `measurement` trait, shown beside the prediction for
// the same batch size. The buttons show once the kernel object answers a ping (kernel.js):
// without one (the standalone page, a saved notebook) there is nobody to answer.

import { MESSAGES } from "../shared/protocol.js";
import { h } from "./dom.js";
import { formatBytes, formatPercent, formatThroughput } from "./format.js";
import { isLive, kernelAnswered, pingKernel } from "./kernel.js";

export function createActions({ model, predictor, signal, getBatch }) {
  // A widget made by hand (SkylineWidget(report=...)) has a kernel but nobody serving these
  // messages; the kernel side says so with its `live` trait.
  const live = isLive(model);
  const reprofile = h("button", { class: "sk-button", text: "Re-profile", data: { skyline: "reprofile" }, attrs: { type: "button", title: "Profile again at the measured batch size" } });
  const measure = h("button", { class: "sk-button", data: { skyline: "measure" }, attrs: { type: "button", title: "Run the iteration at this batch size and compare with the prediction" } });
  const result = h("div", { class: "sk-measurement", data: { skyline: "measurement" }, attrs: { "aria-live": "polite" } });
  const buttons = h("div", { class: "sk-action-buttons", attrs: { hidden: "" } }, [reprofile, measure]);
  const el = h("div", { class: "sk-actions" }, [live ? buttons : null, result]);
  if (live) {
    if (kernelAnswered(model)) buttons.hidden = false; // an earlier view already heard it
    pingKernel(model, signal).then((served) => { if (served) buttons.hidden = false; });
  }

  reprofile.addEventListener("click", () => model.send({ kind: MESSAGES.REPROFILE }), { signal });
  measure.addEventListener("click", () => model.send({ kind: MESSAGES.MEASURE, batch_size: getBatch() }), { signal });

  function update() {
    measure.textContent = `Measure at ${getBatch()}`;
    const m = typeof model.get === "function" ? model.get("measurement") : null;
    result.replaceChildren();
    if (!m || !Number.isFinite(m.batch_size)) return;
    const lines = [`Measured at ${m.batch_size}: ${formatThroughput(m.throughput)}, peak ${formatBytes(m.peak_bytes)}`];
    if (predictor.canManipulate) {
      const t = predictor.predictThroughput(m.batch_size);
      const p = predictor.predictPeakBytes(m.batch_size);
      lines.push(`predicted ${formatThroughput(t)} (${formatPercent((m.throughput - t) / t)} off), `
        + `${formatBytes(p)} (${formatPercent((m.peak_bytes - p) / p)} off)`);
    }
    for (const text of lines) result.append(h("div", { text }));
  }

  update();
  return { el, update };
}
