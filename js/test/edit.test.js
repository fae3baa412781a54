// The widget's side of editing the cell (js/src/edit.js): the kernel's edit, applied by the one
// writer through the extension's event, else the shared model, else a copyable line.
import { afterEach, describe, expect, test } from "vitest";
import { applyEdit, editTarget, locateEdit, readCurrentSource, spell } from "../src/edit.js";
import widget from "../src/index.js";
import { fakeKernel, locateLiteral, servedModel } from "./fake-kernel.js";
import { fakeModel, key, loadReport, mount } from "./helpers.js";

let view;
afterEach(() => view?.unmount());
const inDocument = () => document.body.appendChild(document.createElement("div"));
const bare = () => ({ get: () => ({}) });

test("edit_target from the kernel overrides report.source", () => {
  const report = loadReport("small");
  const trait = { cell_id: report.source.cell_id, start_utf16: 1, end_utf16: 3, value: 32 };
  expect(editTarget({ get: () => trait }, report)).toMatchObject({ start_utf16: 1, end_utf16: 3, code: report.source.code });
  expect(editTarget({ get: () => ({}) }, report)).toBe(report.source);
});

function sharedNotebook(cellId, source) {
  const calls = [];
  const cell = {
    id: cellId,
    source,
    getSource() {
      return this.source;
    },
    undoManager: { stopCapturing: () => calls.push("stop") },
    updateSource(start, end, text) {
      calls.push([start, end, text]);
      this.source = this.source.slice(0, start) + text + this.source.slice(end);
    },
  };
  return { cell, calls, shared: { cells: [{ id: "other" }, cell] } };
}

const managed = (shared) => ({ get: () => ({}), widget_manager: { context: { model: { sharedModel: shared } } } });

describe("applyEdit: (a) event, (b) shared model, (c) copyable text", () => {
  test("(a) the companion extension handles the event: the profiled span, in UTF-16 units", async () => {
    const report = loadReport("small");
    const el = inDocument();
    let seen = null;
    const handler = (e) => {
      seen = { ...e.detail, cancelable: e.cancelable, bubbles: e.bubbles };
      e.preventDefault();
      e.detail.result = { ok: true, message: "Replaced \"32\" by \"48\"." };
    };
    document.addEventListener("skyline-edit-source", handler);
    const result = await applyEdit({ el, model: bare(), report, batch: 48 });
    document.removeEventListener("skyline-edit-source", handler);
    expect(seen).toEqual({
      cellId: report.source.cell_id, start: report.source.start_utf16, end: report.source.end_utf16,
      text: "48", expected: "32", cancelable: true, bubbles: true,
    });
    expect(result).toMatchObject({ ok: true, via: "event", message: "Set the batch size to 48 in the source cell (was 32). Ctrl+Z in that cell undoes it." });
    el.remove();
  });

  test("(a) a refusal (or a promised result) is reported with the copyable line", async () => {
    const report = loadReport("small");
    const el = inDocument();
    const handler = (e) => {
      e.preventDefault();
      e.detail.result = Promise.resolve({ ok: false, message: "The cell changed since it was profiled" });
    };
    document.addEventListener("skyline-edit-source", handler);
    const result = await applyEdit({ el, model: bare(), report, batch: 48 });
    document.removeEventListener("skyline-edit-source", handler);
    expect(result).toMatchObject({ ok: false, via: "manual", text: "batch_size = 48" });
    expect(result.message).toMatch(/changed since it was profiled/);
    el.remove();
  });

  test("(b) no handler: the same writer on the widget manager's shared model, one undo step", async () => {
    const report = loadReport("small");
    const { cell, calls, shared } = sharedNotebook(report.source.cell_id, report.source.code);
    const result = await applyEdit({ el: document.createElement("div"), model: managed(shared), report, batch: 128 });
    expect(result).toMatchObject({ ok: true, via: "shared-model" });
    expect(calls).toEqual(["stop", [report.source.start_utf16, report.source.end_utf16, "128"], "stop"]);
    expect(cell.source).toBe(report.source.code.replace("batch_size=32", "batch_size=128"));
  });

  test("an edit the widget wrote tells the kernel, so an undo in the cell stays undone", async () => {
    const report = loadReport("small");
    const { shared } = sharedNotebook(report.source.cell_id, report.source.code);
    const set = {};
    const model = { ...managed(shared), set: (k, v) => { set[k] = v; }, save_changes: () => { set.saved = true; } };
    await applyEdit({ el: document.createElement("div"), model, report, batch: 128 });
    expect(set).toEqual({ written_batch_size: 128, saved: true });
    const refused = {};
    const plain = { get: () => ({}), set: (k, v) => { refused[k] = v; } };
    const result = await applyEdit({ el: document.createElement("div"), model: plain, report, batch: 64 });
    expect(result.via).toBe("manual");
    expect(refused).toEqual({}); // nothing written: the kernel's next %%skyline run writes it
  });

  test("a literal grouped by underscores: expected as written, the new value spelled alike", async () => {
    const report = loadReport("small");
    const code = report.source.code.replace("batch_size=32", "batch_size=2_000");
    const start = report.source.start_utf16;
    report.source = { ...report.source, code, end: report.source.start + 5, end_utf16: start + 5, value: 2000, text: "2_000" };
    const { cell, calls, shared } = sharedNotebook(report.source.cell_id, code);
    const result = await applyEdit({ el: document.createElement("div"), model: managed(shared), report, batch: 1536 });
    expect(calls).toEqual(["stop", [start, start + 5, "1_536"], "stop"]);
    expect(cell.source).toBe(code.replace("batch_size=2_000", "batch_size=1_536"));
    expect(result.message).toBe("Set the batch size to 1_536 in the source cell (was 2_000). Ctrl+Z in that cell undoes it.");
    const plain = await applyEdit({ el: document.createElement("div"), model: bare(), report, batch: 999 });
    expect(plain).toMatchObject({ via: "manual", text: "batch_size = 999" });
    expect(spell(1234567, { text: "2_000" })).toBe("1_234_567");
    expect(spell(1234567, { value: 32 })).toBe("1234567"); // a report from before `text`
  });

  test("(b) an internal API that throws falls through to (c)", async () => {
    const report = loadReport("small");
    const model = { get: () => ({}), get widget_manager() { throw new Error("no"); } };
    const result = await applyEdit({ el: document.createElement("div"), model, report, batch: 7 });
    expect(result).toMatchObject({ ok: false, via: "manual", text: "batch_size = 7" });
  });

  test("(c) a source that cannot be edited says why", async () => {
    const report = loadReport("small");
    report.source = { ...report.source, editable: false, reason: "batch_size is not an int literal (2**5)" };
    const result = await applyEdit({ el: document.createElement("div"), model: bare(), report, batch: 7 });
    expect(result.message).toMatch(/2\*\*5/);
    expect(result.text).toBe("batch_size = 7");
  });
});

test("drag end in the widget: trait, edit event from the widget element, notice", async () => {
  const report = loadReport("small");
  view = mount({ report });
  const got = [];
  view.el.addEventListener("skyline-edit-source", (e) => got.push({ ...e.detail }));
  key(view.q("throughput-bar"), "ArrowUp");
  key(view.q("throughput-bar"), "Enter");
  expect(view.model.get("selected_batch_size")).toBe(33);
  await new Promise((r) => setTimeout(r, 0));
  expect(got).toEqual([expect.objectContaining({ text: "33", expected: "32" })]);
  // Nobody handled it and there is no notebook: the copyable fallback is shown.
  const notice = view.q("edit-status");
  expect(notice.hidden).toBe(false);
  expect(notice.dataset.via).toBe("manual");
  expect(view.q("copy-text").value).toBe("batch_size = 33");
});

describe("a changed cell: the kernel's edit for its current text", () => {
  test("(b) the kernel's edit, in UTF-16 units of the text it was sent, is applied verbatim", async () => {
    const report = loadReport("small");
    const current = report.source.code.replace("batch_size=32", "batch_size = 32  # spaced");
    const { cell, calls, shared } = sharedNotebook(report.source.cell_id, current);
    const at = current.indexOf("32  # spaced");
    const model = managed(shared);
    const kernel = await servedModel(model, () => ({ ok: true, edit: { start: at, end: at + 2, expected: "32", text: "64" } }));
    const result = await applyEdit({ el: document.createElement("div"), model, report, batch: 64 });
    expect(kernel.calls).toEqual([{ name: "ping", msg: null }, { name: "locate", msg: { code: current, batch_size: 64 } }]);
    expect(result).toMatchObject({ ok: true, via: "shared-model" });
    expect(calls).toEqual(["stop", [at, at + 2, "64"], "stop"]);
    expect(cell.source).toContain("batch_size = 64  # spaced");
  });

  test("a kernel refusal is final: its reason is shown and nothing is edited", async () => {
    const report = loadReport("small");
    const { calls, shared } = sharedNotebook(report.source.cell_id, `${report.source.code}\nx = 1\n`);
    const model = managed(shared);
    await servedModel(model, () => ({ ok: false, reason: "two candidates" }));
    const result = await applyEdit({ el: document.createElement("div"), model, report, batch: 64 });
    expect(result).toMatchObject({ ok: false, via: "manual", text: "batch_size = 64", message: "Not edited: two candidates. Set it by hand:" });
    expect(calls).toEqual([]);
  });

  test("no kernel to ask: refused, not guessed", async () => {
    const report = loadReport("small");
    const { calls, shared } = sharedNotebook(report.source.cell_id, `import os\n${report.source.code}`);
    const result = await applyEdit({ el: document.createElement("div"), model: managed(shared), report, batch: 64 });
    expect(result).toMatchObject({ ok: false, via: "manual", text: "batch_size = 64" });
    expect(result.message).toMatch(/^Not edited: the cell changed since it was profiled and no kernel answered/);
    expect(calls).toEqual([]);
  });
});

/** A fake companion extension: answers reads with `source`, applies or refuses edits. */
function fakeExtension(source, { refuse = null } = {}) {
  const ext = { source, edits: [] };
  const onRead = (e) => {
    e.preventDefault();
    e.detail.source = ext.source;
  };
  const onEdit = (e) => {
    const d = e.detail;
    ext.edits.push({ ...d });
    e.preventDefault();
    if (refuse || ext.source.slice(d.start, d.end) !== d.expected) {
      d.result = { ok: false, message: refuse || "The cell changed since it was profiled." };
      return;
    }
    ext.source = ext.source.slice(0, d.start) + d.text + ext.source.slice(d.end);
    d.result = { ok: true, message: `Replaced ${JSON.stringify(d.expected)} by ${JSON.stringify(d.text)}.` };
  };
  document.addEventListener("skyline-read-source", onRead);
  document.addEventListener("skyline-edit-source", onEdit);
  ext.remove = () => {
    document.removeEventListener("skyline-read-source", onRead);
    document.removeEventListener("skyline-edit-source", onEdit);
  };
  return ext;
}

describe("(a) with the extension, the cell's current text decides", () => {
  let ext;
  afterEach(() => ext?.remove());

  test("unchanged cell: no kernel round trip, the profiled span is edited", async () => {
    const report = loadReport("small");
    ext = fakeExtension(report.source.code);
    const model = bare();
    const kernel = await servedModel(model, () => { throw new Error("not asked"); });
    const result = await applyEdit({ el: inDocument(), model, report, batch: 40 });
    expect(result).toMatchObject({ ok: true, via: "event" });
    expect(kernel.calls.map((c) => c.name)).toEqual(["ping"]);
    expect(ext.source).toBe(report.source.code.replace("batch_size=32", "batch_size=40"));
  });

  test("typed above the def: the kernel's edit is dispatched as it came", async () => {
    const report = loadReport("small");
    const typed = `# a line typed after profiling 🚀\n${report.source.code}`;
    ext = fakeExtension(typed);
    const model = bare();
    await servedModel(model, locateLiteral);
    const result = await applyEdit({ el: inDocument(), model, report, batch: 48 });
    const at = typed.indexOf("32):");
    expect(ext.edits).toEqual([{ cellId: report.source.cell_id, start: at, end: at + 2, expected: "32", text: "48" }]);
    expect(result).toMatchObject({ ok: true, via: "event", message: "Set the batch size to 48 in the source cell (was 32). Ctrl+Z in that cell undoes it." });
    expect(ext.source).toBe(typed.replace("batch_size=32", "batch_size=48"));
  });

  test("the kernel refuses (ambiguous): its reason is shown and nothing is dispatched", async () => {
    const report = loadReport("small");
    const typed = `${report.source.code}\ndef skyline_input_provider(batch_size=8):\n    pass\n`;
    ext = fakeExtension(typed);
    const reason = "ambiguous: `skyline_input_provider` is defined 2 times (lines 19, 31)";
    const model = bare();
    await servedModel(model, () => ({ ok: false, reason }));
    const result = await applyEdit({ el: inDocument(), model, report, batch: 48 });
    expect(result).toMatchObject({ ok: false, via: "manual", text: "batch_size = 48", message: `Not edited: ${reason}. Set it by hand:` });
    expect(ext.edits).toEqual([]);
  });

  test("a second drag: the kernel finds the literal the first one wrote", async () => {
    const report = loadReport("small");
    ext = fakeExtension(report.source.code);
    const el = inDocument();
    const model = bare();
    const kernel = await servedModel(model, locateLiteral);
    await applyEdit({ el, model, report, batch: 100 });
    const second = await applyEdit({ el, model, report, batch: 7 });
    expect(second).toMatchObject({ ok: true, message: expect.stringContaining("(was 100)") });
    expect(kernel.calls.map((c) => c.name)).toEqual(["ping", "locate"]);
    expect(ext.edits.map((e) => [e.expected, e.text])).toEqual([["32", "100"], ["100", "7"]]);
    expect(ext.source).toBe(report.source.code.replace("batch_size=32", "batch_size=7"));
  });

  test("the extension refuses: the shared model is tried before the copyable text", async () => {
    const report = loadReport("small");
    ext = fakeExtension(report.source.code, { refuse: "No open notebook has a cell with id x." });
    const { cell, calls, shared } = sharedNotebook(report.source.cell_id, report.source.code);
    const result = await applyEdit({ el: inDocument(), model: managed(shared), report, batch: 50 });
    expect(ext.edits).toHaveLength(1);
    expect(result).toMatchObject({ ok: true, via: "shared-model" });
    expect(calls.filter(Array.isArray)).toHaveLength(1);
    expect(cell.source).toContain("batch_size=50");
  });

  test("refused by both: the extension's reason, with the copyable line", async () => {
    const report = loadReport("small");
    ext = fakeExtension(report.source.code, { refuse: "The cell changed since it was profiled." });
    const result = await applyEdit({ el: inDocument(), model: bare(), report, batch: 50 });
    expect(result).toMatchObject({ ok: false, via: "manual", text: "batch_size = 50" });
    expect(result.message).toBe("The cell changed since it was profiled. Set it by hand:");
  });
});

describe("reading and locating", () => {
  test("without the extension the shared model's text is read", () => {
    const { shared } = sharedNotebook("c1", "batch_size = 3\n");
    const model = managed(shared);
    expect(readCurrentSource(inDocument(), model, "c1")).toBe("batch_size = 3\n");
    expect(readCurrentSource(inDocument(), model, "missing")).toBe(null);
    expect(readCurrentSource(inDocument(), {}, null)).toBe(null);
  });

  test("an unreadable cell keeps the profiled span (the writer still checks `expected`)", async () => {
    const target = { start_utf16: 4, end_utf16: 6, value: 32, code: "x = 32\n" };
    expect(await locateEdit(bare(), null, target, 9)).toEqual({ start: 4, end: 6, expected: "32", text: "9" });
  });
});

test("widget: a kernel refusal shows its reason in edit-status", async () => {
  const report = loadReport("small");
  const ext = fakeExtension(`# typed\n${report.source.code}`);
  const reason = "ambiguous: `batch_size` is assigned 2 times at module level (lines 1, 4)";
  const kernel = fakeKernel({ ping: () => ({ ok: true }), locate: () => ({ ok: false, reason }) });
  const model = fakeModel({ report });
  model.send = () => {};
  const el = inDocument();
  const cleanup = widget.render({ model, el, experimental: { invoke: kernel.invoke } });
  const q = (name) => el.querySelector(`[data-skyline="${name}"]`);
  await new Promise((r) => setTimeout(r, 0)); // the ping's answer
  key(q("throughput-bar"), "ArrowUp");
  key(q("throughput-bar"), "Enter");
  await new Promise((r) => setTimeout(r, 10));
  ext.remove();
  expect(q("edit-status").hidden).toBe(false);
  expect(q("edit-status").querySelector(".sk-edit-message").textContent).toBe(`Not edited: ${reason}. Set it by hand:`);
  expect(ext.edits).toEqual([]);
  cleanup();
  el.remove();
});
