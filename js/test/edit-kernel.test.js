// The widget's requests to its kernel object (js/src/kernel.js) over anywidget's invoke: the ping
// that shows the action buttons, and `locate`, asked only once a ping was answered (a notebook
// reopened with a fresh kernel has no kernel object behind the widget: nothing waits there).
// Liveness after the first answer (timeouts, restarts, re-checks) is in liveness.test.js.
import { afterEach, expect, test } from "vitest";
import { connectKernel, kernelAnswered, locateInKernel, pingKernel } from "../src/kernel.js";
import widget from "../src/index.js";
import { fakeKernel } from "./fake-kernel.js";
import { fakeModel, key, loadReport } from "./helpers.js";

let cleanup = null;
afterEach(() => cleanup?.());

/** The widget over a model with a comm (records what it sends) and a shared notebook whose
 *  providers cell was `typed` into since profiling. */
function mountWithKernel(kernel, typed = (code) => code) {
  const report = loadReport("small");
  const cell = {
    id: report.source.cell_id,
    source: typed(report.source.code),
    getSource() {
      return this.source;
    },
    updateSource(start, end, text) {
      this.source = this.source.slice(0, start) + text + this.source.slice(end);
    },
  };
  const model = fakeModel({ report, live: true });
  model.sent = [];
  model.send = (msg) => model.sent.push(msg);
  model.widget_manager = { context: { model: { sharedModel: { cells: [cell] } } } };
  const el = document.body.appendChild(document.createElement("div"));
  const stop = widget.render({ model, el, experimental: { invoke: kernel.invoke } });
  cleanup = () => {
    stop();
    el.remove();
  };
  const q = (name) => el.querySelector(`[data-skyline="${name}"]`);
  return { model, cell, q, report };
}

const tick = () => new Promise((r) => setTimeout(r, 0));

/** Keyboard drag (ArrowUp, Enter commits); resolves once the edit notice shows, or null. */
async function dragUpAndWait(q, withinMs) {
  key(q("throughput-bar"), "ArrowUp");
  key(q("throughput-bar"), "Enter");
  const deadline = Date.now() + withinMs;
  while (Date.now() < deadline) {
    if (!q("edit-status").hidden) return q("edit-status").textContent;
    await new Promise((r) => setTimeout(r, 5));
  }
  return null;
}

test("the kernel answers the ping: Re-profile and Measure at N send messages; the measurement shows", async () => {
  const kernel = fakeKernel();
  const { model, q } = mountWithKernel(kernel);
  await tick();
  expect(q("reprofile").closest("[hidden]")).toBeNull();
  expect(q("reprofile").disabled).toBe(false);
  expect(q("reprofile").textContent).toBe("Re-profile");
  key(q("throughput-bar"), "ArrowUp");
  expect(q("measure").textContent).toBe("Measure at 33");
  expect(q("reprofile").textContent).toBe("Re-profile at 32"); // the measured batch, said
  q("measure").click();
  await tick();
  q("reprofile").click();
  await tick();
  // Each click asks the kernel again first, then sends.
  expect(kernel.calls.map((c) => c.name)).toEqual(["ping", "ping", "ping"]);
  expect(model.sent).toEqual([{ kind: "measure", batch_size: 33 }, { kind: "reprofile" }]);
  model.set("measurement", { batch_size: 33, iteration_ms: 2.0, peak_bytes: 3_900_000, throughput: 16500 });
  expect(q("measurement").textContent).toContain("Measured at 33: 16,500 samples/s");
  expect(q("measurement").textContent).toContain("predicted");
});

test("beyond the samples, where a kernel can measure, the extrapolated note says how to know", async () => {
  const { q } = mountWithKernel(fakeKernel());
  await tick();
  key(q("throughput-bar"), "End");
  expect(q("measure").textContent).toBe("Measure at 2048");
  expect(q("extrapolated").textContent).toBe(
    "The prediction is extrapolated beyond the measured 256: Measure at 2048 adds it to the samples.");
});

test("no answer to the ping: buttons stay hidden, and a changed cell is refused at once", async () => {
  const kernel = fakeKernel({}); // nothing answers
  const { model, cell, q } = mountWithKernel(kernel, (code) => `# typed since profiling\n${code}`);
  await tick();
  expect(kernel.calls).toEqual([{ name: "ping", msg: null }]);
  expect(kernelAnswered(model)).toBe(false);
  expect(q("reprofile").closest("[hidden]")).not.toBe(null);
  const before = cell.source;
  const message = await dragUpAndWait(q, 1000); // the locate timeout alone would be 3000 ms
  expect(message).toMatch(/^Not edited: the cell changed since it was profiled and no kernel answered/);
  expect(kernel.calls.map((c) => c.name)).toEqual(["ping"]);
  expect(cell.source).toBe(before);
});

test("after the ping's answer the kernel locates the literal in the changed cell", async () => {
  const kernel = fakeKernel({ ping: () => ({ ok: true }), locate: () => ({ ok: false, reason: "two candidates" }) });
  const { model, q } = mountWithKernel(kernel, (code) => `# typed\n${code}`);
  await tick();
  expect(kernelAnswered(model)).toBe(true);
  const message = await dragUpAndWait(q, 1000);
  expect(kernel.calls.map((c) => c.name)).toEqual(["ping", "locate"]);
  expect(kernel.calls[1].msg).toMatchObject({ batch_size: 33, code: expect.stringMatching(/^# typed\n/) });
  expect(message).toMatch(/Not edited: two candidates\. Set it by hand:/);
  expect(q("edit-status").classList.contains("sk-edit-refused")).toBe(true);
  expect(model.sent).toEqual([]); // requests go through invoke, not hand-made messages
});

test("one ping at a time per model; a widget without a live kernel object is not pinged", async () => {
  const model = fakeModel({ live: true });
  model.send = () => {};
  expect(kernelAnswered(model)).toBe(null);
  expect(kernelAnswered(null)).toBe(false);
  expect(await pingKernel(model)).toBe(false); // no invoke connected
  const kernel = fakeKernel();
  connectKernel(model, kernel.invoke);
  const [first, second] = await Promise.all([pingKernel(model), pingKernel(model)]);
  expect([first, second, kernelAnswered(model)]).toEqual([true, true, true]);
  expect(kernel.calls).toHaveLength(1);

  const handMade = fakeModel({ live: false });
  handMade.send = () => {};
  connectKernel(handMade, kernel.invoke);
  expect(await pingKernel(handMade)).toBe(false);
  expect(await locateInKernel(handMade, "x = 1", 2)).toBe(null);
  expect(kernel.calls).toHaveLength(1);
});

test("a locate request that goes unanswered times out to null", async () => {
  const model = fakeModel();
  model.send = () => {};
  connectKernel(model, fakeKernel({ ping: () => ({ ok: true }) }).invoke);
  await pingKernel(model);
  expect(await locateInKernel(model, "x = 1", 2, 10)).toBe(null);
});

test("a view torn down before the answer forgets the ping, so the next view asks again", async () => {
  const model = fakeModel({ live: true });
  model.send = () => {};
  const kernel = fakeKernel({});
  connectKernel(model, kernel.invoke);
  const view = new AbortController();
  const answered = pingKernel(model, view.signal);
  view.abort();
  expect(await answered).toBe(false);
  expect(kernelAnswered(model)).toBe(null);
});
