// The key-metric bars (Skyline's Figure 2): throughput relative to the predicted maximum and
// peak memory relative to the device's capacity. Dragging either bar asks the models which batch
// size would give that value; everything else follows live. Drags are RELATIVE (the value moves
// by how far the pointer moves, pressing does not jump) and use pointer capture, so leaving the
// bar mid-drag keeps dragging — the original Skyline lost the drag there. A drag moves along the
// fitted line from the prediction at the batch it started on (dragValues), so it is continuous
// and monotonic even though the bar starts at the measured value, which noise puts off the line.
// The keyboard steps the batch size itself: arrows ±1, Page ±10 %, Home/End to the extremes.

import { h, setText } from "./dom.js";
import { formatBytes, formatThroughput } from "./format.js";
import { clamp, cssPercent, fraction } from "./scale.js";

const KEY_COMMIT_DELAY_MS = 700; // one edit per burst of key presses, not one per press
const FALLBACK_TRACK_PX = 160; // jsdom and hidden outputs report a 0-height track

function metrics(report, predictor) {
  const measuredBatch = Number(report.batch_size);
  const capacity = predictor.capacityBytes || Number(report.device?.capacity_bytes) || 0;
  const live = predictor.canManipulate;
  const throughputMax = predictor.maxThroughput ?? (Number(report.models?.max_throughput) || Number(report.throughput) || 0);
  return [
    {
      name: "throughput",
      label: "Throughput",
      max: throughputMax,
      maxText: `max ${formatThroughput(throughputMax)}`,
      measured: Number(report.throughput),
      predict: (b) => predictor.predictThroughput(b),
      batchFor: (v) => predictor.batchSizeForThroughput(v),
      format: formatThroughput,
      ariaNow: (v) => Math.round(v * 10) / 10,
    },
    {
      name: "memory",
      label: "Peak memory",
      max: capacity || Number(report.peak_bytes) || 0,
      maxText: capacity ? `of ${formatBytes(capacity)}` : "capacity unknown",
      measured: Number(report.peak_bytes),
      predict: (b) => predictor.predictPeakBytes(b),
      batchFor: (v) => predictor.batchSizeForMemory(v),
      format: formatBytes,
      ariaNow: (v) => Math.round(v),
    },
  ].map((m) => ({
    ...m,
    valueAt: (batch) => (batch === measuredBatch || !live ? m.measured : m.predict(batch)),
  }));
}

const BLEND_SPAN = 0.1; // the drawn bar joins the fitted line within 10 % of the bar's range

/**
 * One drag step. `start` is the model's prediction at the batch the drag began on and `shown`
 * the value the bar was drawn at (the measured one there); `delta` is how far the pointer moved,
 * in value units. `model` (clamped to [lo, hi]) is what gets inverted into a batch size: it
 * starts exactly on the line, so the first pixels cannot pick a batch on the wrong side of the
 * profiled one. `shown` is where the bar is drawn: it starts where the bar was and blends into
 * the line over max(2·|offset|, span), which keeps it strictly increasing in `delta`.
 */
export function dragValues({ start, shown, delta, lo, hi, span }) {
  const model = clamp(start + delta, Math.min(lo, hi), Math.max(lo, hi));
  const offset = Number.isFinite(shown) ? shown - start : 0;
  const reach = Math.max(2 * Math.abs(offset), span);
  const weight = reach > 0 ? Math.max(0, 1 - Math.abs(model - start) / reach) : 0;
  return { model, shown: model + offset * weight };
}

export function createBars({ report, predictor, signal, onPreview, onCommit, initialBatch }) {
  const measuredBatch = Number(report.batch_size);
  const live = predictor.canManipulate;
  const maxBatch = live ? predictor.maxBatchSize() : measuredBatch;
  const ms = metrics(report, predictor);
  let batch = initialBatch ?? measuredBatch;
  let committed = batch;
  let keyTimer = null;
  signal.addEventListener("abort", () => clearTimeout(keyTimer));

  const batchText = h("span", { class: "sk-batch-value", data: { skyline: "predicted-batch-size" }, text: String(batch) });
  const batchTag = h("span", { class: "sk-batch-tag" });
  const views = ms.map((m) => buildBar(m));
  const reason = live ? null : h("div", {
    class: "sk-drag-reason",
    data: { skyline: "drag-reason" },
    text: `Dragging is off: ${predictor.reason || "no performance model"}`,
  });
  const el = h("div", { class: "sk-bars", data: { skyline: "bars" } }, [
    h("div", { class: "sk-bars-row" }, views.map((v) => v.el)),
    h("div", { class: "sk-batch" }, [h("span", { class: "sk-batch-label", text: "Batch size " }), batchText, batchTag]),
    reason,
  ]);

  function buildBar(m) {
    const fill = h("div", { class: "sk-bar-fill" }, [h("div", { class: "sk-bar-grip" })]);
    const track = h("div", {
      class: `sk-bar-track${live ? "" : " sk-disabled"}`,
      data: { skyline: `${m.name}-bar` },
      attrs: {
        role: "slider",
        tabindex: 0,
        "aria-label": `${m.label} (drag to choose a batch size)`,
        "aria-orientation": "vertical",
        "aria-valuemin": 0,
        "aria-valuemax": m.ariaNow(m.max),
        "aria-disabled": live ? null : "true",
      },
    }, [fill]);
    const knee = predictor.kneeBatchSize;
    if (live && knee && knee <= maxBatch) {
      const kneeValue = m.predict(knee);
      track.append(h("div", {
        class: "sk-bar-knee",
        data: { skyline: "knee" },
        title: `Knee at batch size ${knee}: doubling the batch beyond it gains < 5 % throughput`,
        style: { bottom: cssPercent(fraction(kneeValue, m.max)) },
      }, [h("span", { class: "sk-bar-knee-label", text: `knee ${knee}` })]));
    }
    const value = h("div", { class: "sk-bar-value" });
    const el = h("div", { class: "sk-bar", data: { metric: m.name } }, [
      h("div", { class: "sk-bar-label", text: m.label }),
      track,
      value,
      h("div", { class: "sk-bar-sub", text: m.maxText }),
    ]);
    const view = { m, el, track, fill, value, show: (v) => showValue(view, v) };
    if (live) wireDrag(view);
    return view;
  }

  function showValue(view, v) {
    const { m } = view;
    view.fill.style.height = cssPercent(fraction(v, m.max));
    setText(view.value, m.format(v));
    view.track.setAttribute("aria-valuenow", String(m.ariaNow(v)));
    view.track.setAttribute("aria-valuetext", `${m.format(v)} at batch size ${batch}`);
  }

  /** Show `next` as the batch size; `dragged` keeps following the pointer instead of snapping. */
  function setBatch(next, dragged = null, draggedValue = null) {
    batch = next;
    setText(batchText, String(batch));
    setText(batchTag, batch === measuredBatch ? " (measured)" : " (predicted)");
    for (const v of views) v.show(v === dragged ? draggedValue : v.m.valueAt(batch));
  }

  function preview(next, dragged, draggedValue) {
    const changed = next !== batch;
    setBatch(next, dragged, draggedValue);
    if (changed) onPreview(next);
  }

  function commit() {
    clearTimeout(keyTimer);
    keyTimer = null;
    if (batch === committed) return;
    committed = batch;
    onCommit(batch);
  }

  function wireDrag(view) {
    const { m, track } = view;
    const opts = { signal };
    let drag = null;
    const lo = m.predict(1);
    const hi = m.predict(maxBatch);

    track.addEventListener("pointerdown", (e) => {
      if (e.button !== undefined && e.button !== 0) return;
      e.preventDefault();
      track.focus({ preventScroll: true });
      try {
        track.setPointerCapture?.(e.pointerId);
      } catch {
        // A synthetic pointer id (tests, some pens) cannot be captured; dragging still works
        // while the pointer stays over the bar.
      }
      const height = track.getBoundingClientRect().height || track.clientHeight || FALLBACK_TRACK_PX;
      drag = { id: e.pointerId, y: e.clientY, start: m.predict(batch), shown: m.valueAt(batch), height };
      track.classList.add("sk-dragging");
    }, opts);

    track.addEventListener("pointermove", (e) => {
      if (!drag || e.pointerId !== drag.id) return;
      const delta = ((drag.y - e.clientY) / drag.height) * m.max;
      const { model, shown } = dragValues({ ...drag, delta, lo, hi, span: BLEND_SPAN * m.max });
      preview(m.batchFor(model), view, shown);
    }, opts);

    const end = (e) => {
      if (!drag || e.pointerId !== drag.id) return;
      drag = null;
      track.classList.remove("sk-dragging");
      setBatch(batch); // snap the dragged bar to the chosen batch size's prediction
      commit();
    };
    track.addEventListener("pointerup", end, opts);
    track.addEventListener("pointercancel", end, opts);
    track.addEventListener("lostpointercapture", end, opts);

    track.addEventListener("keydown", (e) => {
      const step = Math.max(1, Math.round(batch * 0.1));
      const keys = {
        ArrowUp: batch + 1, ArrowRight: batch + 1, ArrowDown: batch - 1, ArrowLeft: batch - 1,
        PageUp: batch + step, PageDown: batch - step, Home: 1, End: maxBatch,
      };
      if (e.key === "Enter") {
        commit();
        return;
      }
      if (!(e.key in keys)) return;
      e.preventDefault();
      preview(clamp(keys[e.key], 1, maxBatch), null, null);
      clearTimeout(keyTimer);
      keyTimer = setTimeout(commit, KEY_COMMIT_DELAY_MS);
    }, opts);
    track.addEventListener("blur", () => keyTimer && commit(), opts);
  }

  setBatch(batch);
  return { el, setBatch: (b) => setBatch(b), get batch() { return batch; }, commit };
}

