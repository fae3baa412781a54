// Progress while the kernel profiles (js/src/progress.js): the stage, the time elapsed and left,
// a bar that moves on between the kernel's updates and never back, Cancel (an interrupt asked of
// the notebook), and "Cancelled" after an interrupted run.
import { afterEach, beforeEach, describe, expect, test, vi } from "vitest";
import { formatDuration, progressAt } from "../src/progress.js";
import widget from "../src/index.js";
import { fakeHost } from "./fake-host.js";
import { fakeKernel } from "./fake-kernel.js";
import { fakeModel } from "./helpers.js";

const STATUS = "Profiling one training iteration at batch size 32\u2026";

test.each([
  [0, "0 s"], [0.4, "0 s"], [2.5, "3 s"], [7.5, "8 s"], [59.4, "59 s"], [59.6, "1 min 00 s"],
  [125, "2 min 05 s"], [3600, "60 min 00 s"], [-3, "0 s"],
])("formatDuration(%s) is %s, as the command line's", (seconds, text) => {
  expect(formatDuration(seconds)).toBe(text); // tests/unit/test_textprogress.py: the same cases
});

describe("progressAt", () => {
  const p = { stage: "timing", done: 0.4, elapsed_s: 10, remaining_s: 20 };
  test("moves on as the estimate runs down", () => {
    expect(progressAt(p, 0)).toEqual({ done: 0.4, elapsedS: 10, remainingS: 20 });
    expect(progressAt(p, 10)).toEqual({ done: 0.7, elapsedS: 20, remainingS: 10 });
  });
  test("stops short of the end when the estimate was too short", () => {
    expect(progressAt(p, 40)).toEqual({ done: 0.99, elapsedS: 50, remainingS: 0 });
  });
  test("without an estimate, only the clock moves", () => {
    expect(progressAt({ ...p, remaining_s: null }, 5)).toEqual({ done: 0.4, elapsedS: 15, remainingS: null });
  });
});

describe("the widget while its kernel profiles", () => {
  let cleanup = [];
  beforeEach(() => vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "performance"] }));
  afterEach(() => {
    for (const stop of cleanup.splice(0)) stop();
    vi.useRealTimers();
  });

  function mount(state = {}, { live = true, invoke = fakeKernel().invoke } = {}) {
    const model = fakeModel({ live, ...state });
    if (live) model.send = () => {};
    const el = document.body.appendChild(document.createElement("div"));
    const stop = widget.render({ model, el, experimental: { invoke } });
    cleanup.push(() => {
      stop();
      el.remove();
    });
    const q = (name) => el.querySelector(`[data-skyline="${name}"]`);
    return { model, q };
  }

  test("the stage, the clock and a bar that advances between updates and never goes back", async () => {
    const { model, q } = mount();
    expect(q("status").hidden).toBe(true);
    model.set("status", STATUS);
    model.set("progress", { stage: "building the model and timing an iteration", done: 0, elapsed_s: 0.2, remaining_s: null });
    expect(q("status").hidden).toBe(false);
    expect(q("status").textContent).toContain(STATUS);
    expect(q("progress-stage").textContent).toBe("Building the model and timing an iteration");
    expect(q("progress-clock").textContent).toBe("0 s elapsed \u00b7 estimating the time left");
    expect(q("progress").getAttribute("aria-valuenow")).toBe("0");

    model.set("progress", { stage: "timing batch size 64, 128", done: 0.4, elapsed_s: 10, remaining_s: 20 });
    expect(q("progress").getAttribute("aria-valuenow")).toBe("40");
    expect(q("progress-clock").textContent).toBe("10 s elapsed \u00b7 about 20 s left");
    await vi.advanceTimersByTimeAsync(10_000);
    expect(q("progress-clock").textContent).toBe("20 s elapsed \u00b7 about 10 s left");
    expect(q("progress").getAttribute("aria-valuenow")).toBe("70");
    expect(q("progress").querySelector(".sk-progress-fill").style.width).toBe("70%");

    // The next stage starts below where the bar got to: it waits there.
    model.set("progress", { stage: "timing each op (run 1)", done: 0.6, elapsed_s: 21, remaining_s: 14 });
    expect(q("progress").getAttribute("aria-valuenow")).toBe("70");
    expect(q("progress-stage").textContent).toBe("Timing each op (run 1)");

    model.set("progress", { stage: "done", done: 1, elapsed_s: 34.6, remaining_s: 0 });
    expect(q("progress-clock").textContent).toBe("35 s elapsed");
    expect(q("progress").getAttribute("aria-valuenow")).toBe("100");

    model.set("status", "");
    model.set("progress", {});
    expect(q("status").hidden).toBe(true);
    expect(q("cancelled").hidden).toBe(true);
  });

  test("a notice the kernel sends stays shown, as text, until the run ends", () => {
    const { model, q } = mount();
    model.set("status", STATUS);
    model.set("progress", { stage: "timing an iteration", done: 0.1, elapsed_s: 9, remaining_s: 60 });
    expect(q("progress-notice").hidden).toBe(true);
    const notice = "One torch thread ran this step 15.9\u00d7 faster on this busy machine (243 ms against 3.87 s). <b>Cancel</b>";
    model.set("progress", { stage: "measuring batch size 16", done: 0.2, elapsed_s: 12, remaining_s: 60, notice });
    expect(q("progress-notice").hidden).toBe(false);
    expect(q("progress-notice").textContent).toBe(notice);
    expect(q("progress-notice").querySelector("b")).toBe(null);
    model.set("progress", { stage: "timing each op (run 1)", done: 0.8, elapsed_s: 50, remaining_s: 9, notice });
    expect(q("progress-notice").textContent).toBe(notice);
    model.set("status", "");
    model.set("progress", {});
    expect(q("status").hidden).toBe(true);
    model.set("status", STATUS);
    model.set("progress", { stage: "building the model and timing an iteration", done: 0, elapsed_s: 0.1, remaining_s: null });
    expect(q("progress-notice").hidden).toBe(true); // a new run starts without it
  });

  test("a measurement has no stages: the status and its clock", async () => {
    const { model, q } = mount();
    model.set("status", "Measuring at batch size 48\u2026");
    await vi.advanceTimersByTimeAsync(3000);
    expect(q("progress").hidden).toBe(true);
    expect(q("progress-clock").textContent).toBe("3 s elapsed");
  });

  test("Cancel asks the notebook to interrupt the kernel", async () => {
    const host = fakeHost("busy");
    cleanup.push(host.remove);
    const { model, q } = mount({ status: STATUS });
    expect(q("cancel").hidden).toBe(false);
    q("cancel").click();
    expect(host.interrupts).toBe(1);
    expect(q("cancel").disabled).toBe(true);
    expect(q("cancel").textContent).toBe("Cancelling\u2026");
    await vi.advanceTimersByTimeAsync(0);
    expect(q("cancel-problem").hidden).toBe(true);

    // The kernel's KeyboardInterrupt ends the run: "Cancelled", with where it stopped.
    model.set("status", "");
    model.set("progress", { cancelled: true, stage: "timing each op (run 2)", elapsed_s: 12.3 });
    expect(q("status").hidden).toBe(true);
    expect(q("cancelled").hidden).toBe(false);
    expect(q("cancelled").textContent).toBe("Cancelled after 12 s, during \u201ctiming each op (run 2)\u201d. The kernel was interrupted and is as it was before this run.");

    // The next run starts afresh: no note, Cancel ready.
    model.set("progress", {});
    model.set("status", STATUS);
    expect(q("cancelled").hidden).toBe(true);
    expect(q("cancel").disabled).toBe(false);
    expect(q("cancel").textContent).toBe("Cancel");
  });

  test("without the extension, the notebook's session through the widget manager; else why not", async () => {
    const { model, q } = mount({ status: STATUS });
    const interrupt = vi.fn(async () => {});
    model.widget_manager = { context: { sessionContext: { session: { kernel: { interrupt } } } } };
    q("cancel").click();
    await vi.advanceTimersByTimeAsync(0);
    expect(interrupt).toHaveBeenCalledOnce();

    delete model.widget_manager;
    model.set("status", "");
    model.set("status", STATUS);
    q("cancel").click();
    await vi.advanceTimersByTimeAsync(0);
    expect(q("cancel").disabled).toBe(false);
    expect(q("cancel-problem").hidden).toBe(false);
    expect(q("cancel-problem").textContent).toBe("Not cancelled: this page cannot reach the kernel: use the notebook's interrupt button (\u25a0).");
  });

  test("a widget no kernel serves has no Cancel; a kernel gone mid-run ends the progress", () => {
    const { q } = mount({ status: STATUS }, { live: false });
    expect(q("status").hidden).toBe(false);
    expect(q("cancel").hidden).toBe(true);

    const host = fakeHost("busy");
    cleanup.push(host.remove);
    const served = mount({ status: STATUS });
    expect(served.q("status").hidden).toBe(false);
    host.setStatus("restarting");
    expect(served.q("status").hidden).toBe(true);
  });
});
