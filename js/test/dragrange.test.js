// The bottom of the drag range: where the user's code raised at a size below the samples
// (a model that squeezes its batch dimension, batch norm over one sample), the report carries
// models.fails_below and neither the pointer, the keys nor a stored selection go down to it.
import { afterEach, describe, expect, test, vi } from "vitest";
import { dragBatch } from "../src/bars.js";
import { Predictor } from "../src/predict.js";
import { key, loadReport, mount, pointer, setRect } from "./helpers.js";

let view;
afterEach(() => {
  view?.unmount();
  vi.useRealTimers();
});

const predicted = () => Number(view.q("predicted-batch-size").textContent);

/** Report "small" (measured 32 … 256) where the user's code raised at 8: the range starts at 9. */
function refusedBelow() {
  const report = loadReport("small");
  report.models.fails_below = 8;
  return report;
}

describe("a size refused below the samples", () => {
  test("dragBatch spans bottom … top, pixel for pixel", () => {
    const above = { start: 32, height: 200, top: 2048, bottom: 9 };
    expect(dragBatch({ ...above, moved: 0 })).toBe(32);
    expect(dragBatch({ ...above, moved: -200 })).toBe(9);
    expect(dragBatch({ ...above, moved: 200 })).toBe(2048);
    expect(dragBatch({ ...above, moved: -1000 })).toBe(9);
    // a track from 9 to 2048 moves the batch by (2048 / 9)^(1/200) a pixel, not 2048^(1/200)
    expect(dragBatch({ ...above, start: 256, moved: -100 })).toBe(Math.round(256 / Math.sqrt(2048 / 9)));
  });

  test("the pointer dragged down past it stops above it, and that is what is committed", () => {
    view = mount({ report: refusedBelow() });
    const bar = view.q("throughput-bar");
    setRect(bar, { top: 100, height: 200 });
    pointer(bar, "pointerdown", { clientY: 0 });
    const seen = [];
    for (let y = 1; y <= 400; y += 1) {
      pointer(bar, "pointermove", { clientY: y });
      seen.push(predicted());
    }
    pointer(bar, "pointerup", { clientY: 400 });
    expect(seen).toEqual([...seen].sort((a, b) => b - a));
    expect(Math.min(...seen)).toBe(9);
    expect(seen.at(-1)).toBe(9);
    expect(view.model.get("selected_batch_size")).toBe(9);
    expect(view.q("extrapolated").textContent).toBe("The prediction is extrapolated below the measured 32. "
      + "The range ends here: your code raised at batch size 8 (see the notes).");
  });

  const BEYOND = "The prediction is extrapolated beyond the measured 256.";

  /** Report "small" as `change` leaves it, at the top of its range: [size, note], then one
   * size in: its note. */
  function atTheTop(change) {
    vi.useFakeTimers();
    const report = loadReport("small");
    change(report.models);
    delete report.models.max_batch_size;
    view?.unmount();
    view = mount({ report });
    const bar = view.q("throughput-bar");
    key(bar, "End");
    const top = [predicted(), view.q("extrapolated").textContent];
    key(bar, "ArrowDown");
    return [...top, view.q("extrapolated").textContent];
  }

  test("at the top that a refused size sets, the note says so too; one size in, it does not", () => {
    // the drag stops at 299 (8× the largest sample would be 2048)
    expect(atTheTop((m) => { m.fails_at = 300; })).toEqual([299,
      `${BEYOND} The range ends here: your code raised at batch size 300 (see the notes).`, BEYOND]);
  });

  test("at the top that a CPU's RAM sets, the note says the step would outgrow it", () => {
    // a CPU without a budget (report "small"): its RAM bounds no bar
    const capacity = (m) => { m.capacity_bytes = Math.ceil(new Predictor(m).predictPeakBytes(1000)); };
    expect(atTheTop(capacity)).toEqual([1000, `${BEYOND} The range ends here: a larger step would likely `
      + "outgrow the RAM this kernel had free after its profile (its tensors, and the heap a process "
      + "keeps beside them).", BEYOND]);
    // a budget's end shows on the bar's scale instead
    expect(atTheTop((m) => { capacity(m); m.memory_bound = true; })).toEqual([1000, BEYOND, BEYOND]);
  });

  test("Home and the arrows stop above it", () => {
    vi.useFakeTimers();
    view = mount({ report: refusedBelow() });
    const bar = view.q("memory-bar");
    key(bar, "Home");
    expect(predicted()).toBe(9);
    key(bar, "ArrowDown");
    key(bar, "PageDown");
    expect(predicted()).toBe(9);
    vi.advanceTimersByTime(1000);
    expect(view.model.get("selected_batch_size")).toBe(9);
  });

  test("a selection saved below it (an older widget state) opens at its bottom", () => {
    view = mount({ report: refusedBelow(), selected_batch_size: 2 });
    expect(predicted()).toBe(9);
  });
});
