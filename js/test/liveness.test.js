// Kernel liveness (js/src/kernel.js, js/src/actions.js): Re-profile and "Measure at N" work while
// a kernel object answers, and are disabled with a one-line reason when none does: no answer in
// time (busy, or nothing serves the widget since a restart or a reopen) or the host saying the
// kernel restarted or was shut down. A hover or a click checks again; dragging still edits.
import { afterEach, beforeEach, expect, test, vi } from "vitest";
import { EVENTS } from "../shared/protocol.js";
import { kernelLiveness, PING_TIMEOUT_MS } from "../src/kernel.js";
import widget from "../src/index.js";
import { fakeHost } from "./fake-host.js";
import { fakeKernel } from "./fake-kernel.js";
import { fakeModel, key, loadReport } from "./helpers.js";

let cleanup = [];
beforeEach(() => vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout", "setInterval", "clearInterval", "performance"] }));
afterEach(() => {
  for (const stop of cleanup.splice(0)) stop();
  vi.useRealTimers();
});

/** The widget, live, over `kernel`, in a notebook whose one cell holds the providers. */
function mount(kernel, state = {}) {
  const report = loadReport("small");
  const cell = {
    id: report.source.cell_id,
    source: report.source.code,
    getSource() {
      return this.source;
    },
    updateSource(start, end, text) {
      this.source = this.source.slice(0, start) + text + this.source.slice(end);
    },
  };
  const model = fakeModel({ report, live: true, ...state });
  model.sent = [];
  model.send = (msg) => model.sent.push(msg);
  model.widget_manager = { context: { model: { sharedModel: { cells: [cell] } } } };
  const el = document.body.appendChild(document.createElement("div"));
  const stop = widget.render({ model, el, experimental: { invoke: kernel.invoke } });
  cleanup.push(() => {
    stop();
    el.remove();
  });
  const q = (name) => el.querySelector(`[data-skyline="${name}"]`);
  return { model, cell, q, el };
}

const silence = () => vi.advanceTimersByTimeAsync(PING_TIMEOUT_MS + 10);

/** A kernel object that answers pings while `answering.on`. */
function switchableKernel() {
  const answering = { on: true };
  return { answering, ...fakeKernel({ ping: () => (answering.on ? { ok: true } : undefined) }) };
}

test("no answer and no host: the buttons show disabled, with the reason on one line", async () => {
  const { q, model } = mount(fakeKernel({}));
  await vi.advanceTimersByTimeAsync(10);
  expect(q("reprofile").closest("[hidden]")).not.toBe(null); // still asking
  await silence();
  expect(q("reprofile").closest("[hidden]")).toBe(null);
  expect(q("reprofile").disabled).toBe(true);
  expect(q("measure").disabled).toBe(true);
  expect(q("kernel-reason").hidden).toBe(false);
  expect(q("kernel-reason").textContent).toBe("The kernel does not answer (busy, restarted or shut down): run the profiling cell again to re-profile or measure.");
  expect(q("reprofile").title).toBe(q("kernel-reason").textContent);
  expect(kernelLiveness(model).state).toBe("silent");
});

test("after a restart the host reports, the buttons say why at once; a drag still edits the cell", async () => {
  const host = fakeHost();
  cleanup.push(host.remove);
  const { q, model, cell } = mount(fakeKernel());
  await vi.advanceTimersByTimeAsync(10);
  expect(q("reprofile").disabled).toBe(false);
  expect(host.watchers).toHaveLength(1);
  host.setStatus("restarting");
  expect(q("reprofile").disabled).toBe(true);
  expect(q("measure").disabled).toBe(true);
  expect(q("kernel-reason").textContent).toBe("The kernel restarted: run the profiling cell again to re-profile or measure.");
  q("reprofile").click();
  await silence();
  expect(model.sent).toEqual([]);

  key(q("throughput-bar"), "ArrowUp");
  key(q("throughput-bar"), "Enter");
  await vi.advanceTimersByTimeAsync(10);
  expect(cell.source).toContain("batch_size=33");
  expect(q("edit-status").textContent).toMatch(/^Set the batch size to 33/);
});

test("the host says shut down: no kernel is running", async () => {
  const host = fakeHost();
  cleanup.push(host.remove);
  const { q } = mount(fakeKernel());
  await vi.advanceTimersByTimeAsync(10);
  host.setStatus("none");
  expect(q("kernel-reason").textContent).toMatch(/^No kernel is running: run the profiling cell again/);
});

test("a busy kernel: disabled while it works, enabled once it answers", async () => {
  const host = fakeHost("busy");
  cleanup.push(host.remove);
  let answer = null;
  const kernel = { calls: [], invoke: (name) => new Promise((resolve) => { kernel.calls.push(name); answer = () => resolve([{ ok: true }, []]); }) };
  const { q } = mount(kernel);
  await silence();
  expect(q("reprofile").disabled).toBe(true);
  expect(q("kernel-reason").textContent).toBe("The kernel is busy running a cell: Re-profile and Measure work once it is idle.");
  answer();
  await vi.advanceTimersByTimeAsync(0);
  expect(q("reprofile").disabled).toBe(false);
  expect(q("kernel-reason").hidden).toBe(true);
  expect(kernel.calls).toEqual(["ping"]); // the same ping, answered late
});

test("an idle kernel that never answers: nothing serves this widget (reopened, restarted)", async () => {
  const host = fakeHost("idle");
  cleanup.push(host.remove);
  const { q } = mount(fakeKernel({}));
  await silence();
  expect(q("kernel-reason").textContent).toBe("No kernel object serves this widget (the kernel restarted or the notebook was reopened): run the profiling cell again to re-profile or measure.");
});

test("a hover checks again: a kernel that stopped answering is found out", async () => {
  const kernel = switchableKernel();
  const { q, el } = mount(kernel);
  await vi.advanceTimersByTimeAsync(10);
  expect(q("reprofile").disabled).toBe(false);
  kernel.answering.on = false;
  el.querySelector(".sk-actions").dispatchEvent(new Event("pointerenter"));
  await silence();
  expect(q("reprofile").disabled).toBe(true);
  expect(q("kernel-reason").hidden).toBe(false);
  kernel.answering.on = true; // e.g. it was only busy: the next hover finds it again
  el.querySelector(".sk-actions").dispatchEvent(new Event("pointerenter"));
  await vi.advanceTimersByTimeAsync(10);
  expect(q("reprofile").disabled).toBe(false);
});

test("a click on a kernel that stopped answering sends nothing and says why", async () => {
  const kernel = switchableKernel();
  const { q, model } = mount(kernel);
  await vi.advanceTimersByTimeAsync(10);
  kernel.answering.on = false;
  q("reprofile").click();
  await silence();
  expect(model.sent).toEqual([]);
  expect(q("reprofile").disabled).toBe(true);
  expect(q("kernel-reason").textContent).toMatch(/^The kernel does not answer/);
});

test("while the kernel works for this widget the buttons wait, and nobody pings it", async () => {
  const kernel = fakeKernel();
  const { q, model, el } = mount(kernel);
  await vi.advanceTimersByTimeAsync(10);
  model.set("status", "Profiling one training iteration\u2026");
  expect(q("reprofile").disabled).toBe(true);
  expect(q("kernel-reason").hidden).toBe(true);
  el.querySelector(".sk-actions").dispatchEvent(new Event("pointerenter"));
  expect(kernel.calls).toHaveLength(1);
  model.set("status", "");
  await vi.advanceTimersByTimeAsync(10);
  expect(kernel.calls).toHaveLength(2); // done working: asked again
  expect(q("reprofile").disabled).toBe(false);
});

test("the watch ends with the view", async () => {
  const host = fakeHost();
  cleanup.push(host.remove);
  mount(fakeKernel());
  expect(host.watchers).toHaveLength(1);
  cleanup.pop()();
  expect(host.watchers).toHaveLength(0);
  expect(EVENTS.WATCH).toBe("skyline-watch-kernel");
});

test("a view rendered before it is in the page starts watching once attached", async () => {
  const host = fakeHost();
  cleanup.push(host.remove);
  const model = fakeModel({ report: loadReport("small"), live: true });
  model.send = () => {};
  const el = document.createElement("div");
  const stop = widget.render({ model, el, experimental: { invoke: fakeKernel().invoke } });
  cleanup.push(() => {
    stop();
    el.remove();
  });
  await vi.advanceTimersByTimeAsync(1000);
  expect(host.watchers).toHaveLength(0);
  document.body.append(el);
  await vi.advanceTimersByTimeAsync(300);
  expect(host.watchers).toHaveLength(1);
  host.setStatus("dead");
  expect(el.querySelector('[data-skyline="kernel-reason"]').textContent).toMatch(/^The kernel died: /);
});

test("an answer to a ping sent before the restart does not bring the widget back", async () => {
  const host = fakeHost();
  cleanup.push(host.remove);
  const answers = [];
  const kernel = { invoke: () => new Promise((resolve) => answers.push(() => resolve([{ ok: true }, []]))) };
  const { q, el } = mount(kernel);
  answers.shift()();
  await vi.advanceTimersByTimeAsync(10);
  expect(q("reprofile").disabled).toBe(false);
  await vi.advanceTimersByTimeAsync(PING_TIMEOUT_MS);
  el.querySelector(".sk-actions").dispatchEvent(new Event("pointerenter")); // a ping in flight
  await vi.advanceTimersByTimeAsync(10);
  host.setStatus("restarting");
  answers.shift()(); // the old kernel's last answer
  await vi.advanceTimersByTimeAsync(10);
  expect(q("reprofile").disabled).toBe(true);
  expect(q("kernel-reason").textContent).toMatch(/^The kernel restarted/);
});

test("a view that starts watching while the kernel restarts knows it is gone", async () => {
  const host = fakeHost("restarting");
  cleanup.push(host.remove);
  const { q } = mount(fakeKernel());
  expect(q("kernel-reason").textContent).toMatch(/^The kernel restarted: /);
  await vi.advanceTimersByTimeAsync(10); // the old kernel's answer to the first ping: too late
  expect(q("reprofile").disabled).toBe(true);
});
