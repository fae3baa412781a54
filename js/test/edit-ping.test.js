// The widget pings its kernel object when it renders (actions.js). When that ping is never
// answered (a notebook reopened with a fresh kernel: nothing serves this widget), a drag over a
// changed cell must not wait out the 3 s kernel-locate timeout; it re-locates line by line.
import { afterEach, expect, test } from "vitest";
import { serverAnswered } from "../src/actions.js";
import widget from "../src/index.js";
import { fakeModel, key, loadReport } from "./helpers.js";

let cleanup = null;
afterEach(() => cleanup?.());

/** The widget over a model with a kernel comm (records what it sends) and a shared notebook. */
function mountWithKernel(typed) {
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
  model.widget_manager = { context: { model: { sharedModel: { cells: [cell], transact: (fn) => fn() } } } };
  const el = document.body.appendChild(document.createElement("div"));
  const stop = widget.render({ model, el });
  cleanup = () => {
    stop();
    el.remove();
  };
  const q = (name) => el.querySelector(`[data-skyline="${name}"]`);
  return { model, cell, q, report };
}

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

test("no pong: a changed cell is re-located without asking the kernel, at once", async () => {
  const { model, cell, q, report } = mountWithKernel((code) => `# typed since profiling\n${code}`);
  expect(model.sent).toEqual([{ kind: "ping" }]);
  expect(serverAnswered(model)).toBe(false);
  expect(q("reprofile")?.closest("[hidden]")).not.toBe(null); // buttons stay hidden
  const message = await dragUpAndWait(q, 1000); // the kernel timeout alone would be 3000 ms
  expect(message).toMatch(/Set the batch size to 33 in the source cell \(was 32\)/);
  expect(model.sent.map((m) => m.kind)).toEqual(["ping"]);
  expect(q("edit-status").classList.contains("sk-edit-refused")).toBe(false);
  expect(cell.source).toBe(`# typed since profiling\n${report.source.code.replace("batch_size=32", "batch_size=33")}`);
});

test("after a pong the kernel's AST locator is asked", async () => {
  const { model, q } = mountWithKernel((code) => `# typed\n${code}`);
  model.emit("msg:custom", { kind: "pong" });
  expect(serverAnswered(model)).toBe(true);
  expect(q("reprofile").closest("[hidden]")).toBe(null);
  model.send = (msg) => {
    model.sent.push(msg);
    if (msg.kind === "locate") queueMicrotask(() => model.emit("msg:custom", { kind: "located", request: msg.request, ok: false, reason: "two candidates" }));
  };
  const message = await dragUpAndWait(q, 1000);
  expect(model.sent.map((m) => m.kind)).toEqual(["ping", "locate"]);
  expect(message).toMatch(/Not edited: two candidates\. Set it by hand:/);
  expect(q("edit-status").classList.contains("sk-edit-refused")).toBe(true); // the error colours
});

test("a model that was never pinged is unknown, not 'no kernel'", () => {
  expect(serverAnswered(fakeModel())).toBe(null);
  expect(serverAnswered(null)).toBe(false);
});
