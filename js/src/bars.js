// The key-metric bars (Skyline's Figure 2): throughput and peak memory at the chosen batch size.
//
// Dragging either bar moves the BATCH SIZE, geometrically: the bar's full height spans the whole
// drag range, bottom … top (top = the memory bound or 8× the largest sample; bottom = 1, or above
// a size where the user's code raised), so every pixel changes the batch by the same factor
// ((top/bottom)^(1/height): under 5 % a pixel for a 160 px bar and a range
// up to 2048). Dragging up always means a larger batch, no few pixels jump by orders of
// magnitude, and the bars always show the prediction at the batch size chosen, so the value
// seen while dragging is the value committed on release. Skyline dragged the VALUE and
// inverted the line, which is ill-conditioned wherever the value barely moves with the batch:
// a saturating throughput (8 px took a model from batch 35 to 541, the 9th to 82,992) or a
// peak dominated by weights (a GPU's capacity puts 1 … 512 inside one pixel). So here the fill
// need not follow the pointer: where throughput saturates it hardly rises while the batch
// grows, which is what the user needs to see.
//
// Drags are relative (pressing does not jump) and use pointer capture, so leaving the bar
// mid-drag keeps dragging. The keyboard steps the batch size: arrows ±1, Page ±10 %, Home/End
// to the ends of the range, Enter commits, Esc hands focus back to the notebook. A focused bar
// owns those keys (dom.js ownKeys): the notebook never sees them, in JupyterLab or Notebook 7.
//
// Every number sits on a line of its own, never broken: the value as number over unit, the
// scale as "max … / up to batch …"; the knee's label stays beside the track, within its height.

import { h, ownKeys, releaseFocus, setText } from "./dom.js";
import { formatBytes, formatInt, formatThroughput } from "./format.js";
import { clamp, cssPercent, fraction } from "./scale.js";

const KEY_COMMIT_DELAY_MS = 700; // one edit per burst of key presses, not one per press
const FALLBACK_TRACK_PX = 160; // jsdom and hidden outputs report a 0-height track
// A knee whose range (knee.knee_spread) spans more than this ratio is labelled "≈", its title the range.
const LOOSE_KNEE = 1.25;

/**
 * The batch size after the pointer moved `moved` px up (negative: down) from where a drag that
 * began at batch `start` pressed, on a track `height` px tall spanning `bottom` … `top`.
 */
export function dragBatch({ start, moved, height, top, bottom = 1 }) {
  const span = Math.log(Math.max(2, top / bottom));
  return clamp(Math.round(start * Math.exp((moved / height) * span)), bottom, Math.max(bottom, top));
}

/**
 * What each bar shows. Memory is scaled to the capacity when that bounds the range (GPU memory,
 * a CPU budget the user gave), else to the peak predicted at the top of the range: a CPU's RAM
 * is no scale a user means. Throughput is scaled to the most the range reaches.
 */
function metrics(report, predictor, top) {
  const live = predictor.canManipulate;
  const measuredBatch = Number(report.batch_size);
  const throughput = Number(report.throughput);
  const peak = Number(report.peak_bytes);
  const bound = report.models ? predictor.memoryBound : report.device?.kind === "cuda";
  const capacity = bound ? predictor.capacityBytes || Number(report.device?.capacity_bytes) || 0 : 0;
  const throughputTop = Math.max(live ? predictor.maxThroughput : 0, throughput) || 0;
  const memoryTop = Math.max(capacity || (live ? predictor.predictPeakBytes(top) : 0), peak) || 0;
  const upTo = live ? `up to batch ${formatInt(top)}` : null;
  return [
    {
      name: "throughput",
      label: "Throughput",
      max: throughputTop,
      scale: live ? [`max ${formatThroughput(throughputTop)}`, upTo] : ["measured"],
      scaleTitle: live ? `The bar's top: the most throughput predicted for batch sizes ${upTo}` : "The measured throughput",
      measured: throughput,
      predict: (b) => predictor.predictThroughput(b),
      format: formatThroughput,
      ariaNow: (v) => Math.round(v * 10) / 10,
    },
    {
      name: "memory",
      label: "Peak memory",
      max: memoryTop,
      scale: capacity ? [`of ${formatBytes(capacity)}`] : live ? [`max ${formatBytes(memoryTop)}`, upTo] : ["measured"],
      scaleTitle: capacity ? "The bar's top: the memory available (the device's, or the budget given)"
        : live ? `The bar's top: the peak predicted ${upTo}` : "The measured peak",
      measured: peak,
      predict: (b) => predictor.predictPeakBytes(b),
      format: formatBytes,
      ariaNow: (v) => Math.round(v),
    },
  ].map((m) => ({
    ...m,
    valueAt: (batch) => (batch === measuredBatch || !live ? m.measured : m.predict(batch)),
  }));
}

/** Text lines, each unbroken; the spaces between them keep the whole readable as one text. */
function lines(texts) {
  return texts.flatMap((text, i) => [i ? " " : null, h("span", { class: "sk-line", text })]).filter(Boolean);
}

/** `measurable`: a kernel serves the widget, so "Measure at N" is there to check a prediction. */
export function createBars({ report, predictor, signal, onPreview, onCommit, initialBatch, measurable = false }) {
  const measuredBatch = Number(report.batch_size);
  const live = predictor.canManipulate;
  const top = live ? predictor.maxBatchSize() : measuredBatch;
  const bottom = live ? predictor.minBatchSize() : measuredBatch;
  const ms = metrics(report, predictor, top);
  // a size the curve was fitted through (a sample, a measurement joined): what it measured
  const samples = new Map((Array.isArray(report.samples) ? report.samples : []).map((s) => [Number(s.batch_size), s]));
  const sampledAt = (b) => {
    const s = samples.get(b);
    const ms = Number(s?.iteration_ms), peak = Number(s?.peak_bytes);
    return ms > 0 && peak > 0 ? `; measured here: ${formatThroughput(1000 * b / ms)}, ${formatBytes(peak)}` : "";
  };
  let batch = initialBatch ?? measuredBatch;
  let committed = batch;
  let keyTimer = null;
  signal.addEventListener("abort", () => clearTimeout(keyTimer));

  const batchText = h("span", { class: "sk-batch-value", data: { skyline: "predicted-batch-size" }, text: String(batch) });
  const batchTag = h("span", { class: "sk-batch-tag" });
  const extrapolated = h("div", { class: "sk-extrapolated", data: { skyline: "extrapolated" }, attrs: { hidden: "" } });
  const views = ms.map((m) => buildBar(m));
  const reason = live ? null : h("div", {
    class: "sk-drag-reason",
    data: { skyline: "drag-reason" },
    text: `Dragging is off: ${predictor.reason || "no performance model"}`,
  });
  const row = h("div", { class: "sk-bars-row" }, views.map((v) => v.el));
  const el = h("div", { class: "sk-bars", data: { skyline: "bars" } }, [
    row,
    h("div", { class: "sk-batch" }, [h("span", { class: "sk-batch-label", text: "Batch size " }), batchText, batchTag]),
    extrapolated,
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
    const knee = predictor.placedKnee; // one the samples place nowhere is said under the samples
    if (live && knee && knee <= top) {
      // The line marks the knee's value; the label beside it is clamped to the track's height.
      // A knee outside the measured sizes says so: it rests on the curve's fixed cost, which
      // samples a few times apart place least surely (one notebook's moved from 11 to 101
      // between profiles whose samples spanned 6-24).
      // A knee that one sample decides says so ("knee ≈84", the range in its title): profiles of
      // one notebook minutes apart put a point knee at 20, 39, 40, 56, 74 and 145.
      const beyond = predictor.extrapolation(knee);
      const { text, loosely } = kneeWords(knee, predictor.kneeRange);
      const title = `Knee at batch size ${formatInt(knee)}: doubling the batch beyond it gains < 5 % throughput${beyond ? ` (${beyond}: an estimate)` : ""}${loosely}`;
      const outside = beyond ? " sk-knee-extrapolated" : "";
      track.style.setProperty("--sk-knee", cssPercent(fraction(m.predict(knee), m.max)));
      track.append(
        h("div", { class: `sk-bar-knee${outside}`, data: { skyline: "knee" }, title }),
        h("span", { class: `sk-bar-knee-label${outside}`, text, attrs: { "aria-hidden": "true" } }),
      );
    }
    const number = h("span", { class: "sk-bar-number" });
    const unit = h("span", { class: "sk-bar-unit" });
    const el = h("div", { class: "sk-bar", data: { metric: m.name } }, [
      h("div", { class: "sk-bar-label", text: m.label }),
      track,
      h("div", { class: "sk-bar-value" }, [number, " ", unit]),
      h("div", { class: "sk-bar-sub", data: { skyline: `${m.name}-scale` }, title: m.scaleTitle }, lines(m.scale)),
    ]);
    const view = { m, el, track, fill, number, unit };
    if (live) wireDrag(view);
    return view;
  }

  function show({ m, fill, number, unit, track }) {
    const v = m.valueAt(batch);
    fill.style.height = cssPercent(fraction(v, m.max));
    // "721 samples/s" as the number over its unit: a number never breaks across lines.
    const [numberText, ...unitText] = m.format(v).split(" ");
    setText(number, numberText);
    setText(unit, unitText.join(" "));
    track.setAttribute("aria-valuenow", String(m.ariaNow(v)));
    track.setAttribute("aria-valuetext", `${m.format(v)} at batch size ${batch}`);
  }

  /** Show `next` as the batch size: both bars at their prediction for it (measured at its own). */
  function setBatch(next) {
    batch = next;
    setText(batchText, String(batch));
    setText(batchTag, batch === measuredBatch ? " (measured)" : ` (predicted${sampledAt(batch)})`);
    const note = batch === measuredBatch ? null : predictor.extrapolation(batch);
    const failed = live ? predictor.failedNext(batch) : null;
    // where a kernel serves the widget, the way to know: a measurement there joins the samples
    const measure = measurable ? `: Measure at ${batch} adds it to the samples` : ""; // the button's words
    const text = [
      note ? `The prediction is ${note}${measure}.` : null,
      failed ? `The range ends here: your code raised at batch size ${formatInt(failed)} (see the notes).` : null,
      live && predictor.ramEnd(batch) ? "The range ends here: a larger step would likely outgrow the RAM "
        + "this kernel had free after its profile (its tensors, and the heap a process keeps beside them)." : null,
    ].filter(Boolean).join(" ");
    setText(extrapolated, text);
    extrapolated.hidden = !text;
    for (const v of views) show(v);
  }

  function preview(next) {
    if (next === batch) return;
    setBatch(next);
    onPreview(next);
  }

  function commit() {
    clearTimeout(keyTimer);
    keyTimer = null;
    if (batch === committed) return;
    committed = batch;
    onCommit(batch);
  }

  function wireDrag({ track }) {
    const opts = { signal };
    let drag = null;

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
      drag = { id: e.pointerId, y: e.clientY, start: batch, height };
      track.classList.add("sk-dragging");
    }, opts);

    track.addEventListener("pointermove", (e) => {
      if (!drag || e.pointerId !== drag.id) return;
      preview(dragBatch({ start: drag.start, moved: drag.y - e.clientY, height: drag.height, top, bottom }));
    }, opts);

    const end = (e) => {
      if (!drag || e.pointerId !== drag.id) return;
      drag = null;
      track.classList.remove("sk-dragging");
      commit();
    };
    track.addEventListener("pointerup", end, opts);
    track.addEventListener("pointercancel", end, opts);
    track.addEventListener("lostpointercapture", end, opts);

    track.addEventListener("blur", () => keyTimer && commit(), opts);
  }

  /** The batch size a key moves to from `batch`, or null for a key that does not step it. */
  function keyBatch(key) {
    const step = Math.max(1, Math.round(batch * 0.1));
    const steps = {
      ArrowUp: batch + 1, ArrowRight: batch + 1, ArrowDown: batch - 1, ArrowLeft: batch - 1,
      PageUp: batch + step, PageDown: batch - step, Home: bottom, End: top,
    };
    return key in steps ? clamp(steps[key], bottom, top) : null;
  }

  /** A key pressed on a focused bar; true when the bar took it (the page never sees it). */
  function onKey(e, target) {
    if (!views.some((v) => v.track === target)) return false;
    if (e.key === "Escape") {
      releaseFocus(target);
      return true;
    }
    if (!live) return false;
    if (e.key === "Enter") {
      commit();
      return true;
    }
    const next = keyBatch(e.key);
    if (next === null) return false;
    e.preventDefault(); // no page scroll
    preview(next);
    clearTimeout(keyTimer);
    keyTimer = setTimeout(commit, KEY_COMMIT_DELAY_MS);
    return true;
  }
  ownKeys(row, onKey, signal);

  setBatch(batch);
  return { el, setBatch, get batch() { return batch; }, commit };
}

/** The knee's label, and what its title adds where the samples place it loosely (a range wider
 * than LOOSE_KNEE; one wider than KNEE_SPAN is not drawn: Predictor.placedKnee). */
function kneeWords(knee, range) {
  const [low, high] = range ?? [knee, knee];
  if (high <= LOOSE_KNEE * low) return { text: `knee ${formatInt(knee)}`, loosely: "" };
  return {
    text: `knee ≈${formatInt(knee)}`, // a range does not fit beside the track: its title has it
    loosely: `. The samples place it loosely: fitted with one measured size left out at a time, it lies between ${formatInt(low)} and ${formatInt(high)}`,
  };
}
