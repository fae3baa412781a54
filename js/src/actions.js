// Kernel actions: "Re-profile" and "Measure at N" (N = the batch size shown), sent as
// {kind, ...} messages that skyline_nb/live.py dispatches, and the measurement that comes back
// in the `measurement` trait, shown beside the prediction for the same batch size. Without a
// kernel (the standalone page, a saved notebook) there is nobody to answer: no buttons.

import { h } from "./dom.js";
import { formatBytes, formatPercent, formatThroughput } from "./format.js";

export function hasKernel(model) {
  return typeof model?.send === "function" && !model.standalone;
}

// Per model: "sent" once pinged, "answered" once a pong came back (sticky: a later view's
// ping does not forget it). Never pinged = unknown.
const pings = new WeakMap();

/** false when this model was pinged and no kernel answered yet (edit.js then skips the kernel). */
export function serverAnswered(model) {
  if (!model || typeof model !== "object") return false;
  return pings.has(model) ? pings.get(model) === "answered" : null;
}

// A notebook reopened with a fresh kernel restores this widget from saved state (`live` still
// true) but no kernel object serves it any more: show the buttons only once the kernel side
// answers a ping.
function awaitServer(model, signal, onAnswer) {
  if (typeof model.on !== "function") return;
  if (pings.get(model) !== "answered") pings.set(model, "sent");
  const onMsg = (msg) => {
    if (!msg || msg.kind !== "pong") return;
    pings.set(model, "answered");
    onAnswer();
  };
  model.on("msg:custom", onMsg);
  signal?.addEventListener("abort", () => model.off?.("msg:custom", onMsg));
  try {
    model.send({ kind: "ping" });
  } catch {
    // no comm to send on: stay hidden
  }
}

export function createActions({ model, predictor, signal, getBatch }) {
  // A widget made by hand (SkylineWidget(report=...)) has a kernel but nobody serving these
  // messages; the kernel side says so with a `live` trait when it has one (absent = assume yes).
  const live = hasKernel(model) && (typeof model.get !== "function" || model.get("live") !== false);
  const reprofile = h("button", { class: "sk-button", text: "Re-profile", data: { skyline: "reprofile" }, attrs: { type: "button", title: "Profile again at the measured batch size" } });
  const measure = h("button", { class: "sk-button", data: { skyline: "measure" }, attrs: { type: "button", title: "Run the iteration at this batch size and compare with the prediction" } });
  const result = h("div", { class: "sk-measurement", data: { skyline: "measurement" }, attrs: { "aria-live": "polite" } });
  const buttons = h("div", { class: "sk-action-buttons", attrs: { hidden: "" } }, [reprofile, measure]);
  const el = h("div", { class: "sk-actions" }, [live ? buttons : null, result]);
  if (live) {
    awaitServer(model, signal, () => { buttons.hidden = false; });
    if (serverAnswered(model)) buttons.hidden = false; // an earlier view already heard a pong
  }

  reprofile.addEventListener("click", () => model.send({ kind: "reprofile" }), { signal });
  measure.addEventListener("click", () => model.send({ kind: "measure", batch_size: getBatch() }), { signal });

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
