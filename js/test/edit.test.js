import { afterEach, describe, expect, test } from "vitest";
import {
  applyEdit, editTarget, literalSpan, locateCurrent, locateInKernel, pyOffsetToUtf16, readCurrentSource, relocate,
} from "../src/edit.js";
import { key, loadReport, mount } from "./helpers.js";

let view;
afterEach(() => view?.unmount());
const inDocument = () => document.body.appendChild(document.createElement("div"));

describe("offsets", () => {
  test("Python code-point offsets become UTF-16 offsets", () => {
    const code = "# 🚀 é\nbatch_size = 32\n";
    const py = [...code].indexOf("3"); // code points, as Python counts
    expect(pyOffsetToUtf16(code, py)).toBe(code.indexOf("32"));
    expect(pyOffsetToUtf16("abc", 2)).toBe(2);
  });

  test("literalSpan prefers the report's UTF-16 offsets and reads the literal", () => {
    const { source } = loadReport("small");
    const span = literalSpan(source);
    expect(span).toMatchObject({ start: source.start_utf16, end: source.end_utf16, expected: "32" });
    const { start_utf16: _s, end_utf16: _e, ...withoutUtf16 } = source;
    expect(literalSpan(withoutUtf16)).toMatchObject({ start: source.start_utf16, expected: "32" });
    expect(source.start_utf16).toBe(source.start + 1); // the astral 🚀 before it
  });

  test("edit_target from the kernel overrides report.source", () => {
    const report = loadReport("small");
    const model = { get: () => ({ cell_id: report.source.cell_id, start: 1, end: 3, start_utf16: 1, end_utf16: 3, value: 32 }) };
    expect(editTarget(model, report)).toMatchObject({ start: 1, end: 3, code: report.source.code });
    expect(editTarget({ get: () => ({}) }, report)).toBe(report.source);
  });
});

describe("relocating the literal in the current cell text", () => {
  const code = "import torch\n\ndef skyline_input_provider(batch_size=32):\n    return 1\n";
  const span = { start: code.indexOf("32"), end: code.indexOf("32") + 2, expected: "32", code };

  test("unchanged text: same span", () => {
    expect(relocate(code, span)).toEqual({ start: span.start, end: span.end });
  });

  test("lines added above: the span moves with its line", () => {
    const current = `# a comment the user typed\n${code}`;
    const where = relocate(current, span);
    expect(current.slice(where.start, where.end)).toBe("32");
    expect(where.start).toBe(span.start + 27);
  });

  test("only the digits changed (an earlier drag): the new literal is found", () => {
    const current = `# typed\n${code.replace("=32", "=1024")}`;
    const where = relocate(current, span);
    expect(current.slice(where.start, where.end)).toBe("1024");
  });

  test("CRLF line breaks: the span moves with its line", () => {
    const crlf = code.replaceAll("\n", "\r\n");
    const at = crlf.indexOf("32");
    const current = `# one\r\n${crlf}`;
    const where = relocate(current, { start: at, end: at + 2, expected: "32", code: crlf });
    expect(where).toEqual({ start: at + 7, end: at + 9 });
  });

  test("the line changed or appears twice: refused", () => {
    expect(relocate(code.replace("=32", "=2**5"), span).error).toMatch(/changed/);
    expect(relocate(code.replace("batch_size=32", "bs=32"), span).error).toMatch(/changed/);
    const twice = `${code}\ndef skyline_input_provider(batch_size=32):\n`;
    expect(relocate(twice, span).error).toMatch(/more than once/);
  });
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
  const shared = { cells: [{ id: "other" }, cell], transacts: 0, transact(fn) { this.transacts += 1; fn(); } };
  return { cell, calls, shared };
}

describe("applyEdit: (a) event, (b) shared model, (c) copyable text", () => {
  test("(a) the companion extension handles the event", async () => {
    const report = loadReport("small");
    const el = inDocument();
    let seen = null;
    const handler = (e) => {
      seen = { ...e.detail, cancelable: e.cancelable, bubbles: e.bubbles };
      e.preventDefault();
      e.detail.result = { ok: true, message: "Replaced \"32\" by \"48\"." };
    };
    document.addEventListener("skyline-edit-source", handler);
    const result = await applyEdit({ el, model: { get: () => ({}) }, report, batch: 48 });
    document.removeEventListener("skyline-edit-source", handler);
    expect(seen).toMatchObject({
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
    const result = await applyEdit({ el, model: { get: () => ({}) }, report, batch: 48 });
    document.removeEventListener("skyline-edit-source", handler);
    expect(result).toMatchObject({ ok: false, via: "manual", text: "batch_size = 48" });
    expect(result.message).toMatch(/changed since it was profiled/);
    el.remove();
  });

  test("(b) no handler: the widget manager's shared notebook model, one transaction", async () => {
    const report = loadReport("small");
    const { cell, calls, shared } = sharedNotebook(report.source.cell_id, `# typed above\n${report.source.code}`);
    const model = { get: () => ({}), widget_manager: { context: { model: { sharedModel: shared } } } };
    const result = await applyEdit({ el: document.createElement("div"), model, report, batch: 128 });
    expect(result).toMatchObject({ ok: true, via: "shared-model" });
    // Its own undo step: the undo manager stops capturing before and after the one edit.
    expect(calls).toEqual(["stop", [report.source.start_utf16 + 14, report.source.end_utf16 + 14, "128"], "stop"]);
    expect(shared.transacts).toBe(1);
    expect(cell.source).toContain("def skyline_input_provider(batch_size=128):");
    expect(cell.source.replace("=128", "=32")).toBe(`# typed above\n${report.source.code}`);
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
    const result = await applyEdit({ el: document.createElement("div"), model: { get: () => ({}) }, report, batch: 7 });
    expect(result.message).toMatch(/2\*\*5/);
    expect(result.text).toBe("batch_size = 7");
  });
});

test("drag end in the widget: trait, edit event from the widget element, notice", async () => {
  const report = loadReport("small");
  view = mount({ report });
  const got = [];
  view.el.addEventListener("skyline-edit-source", (e) => got.push(e.detail));
  key(view.q("throughput-bar"), "ArrowUp");
  key(view.q("throughput-bar"), "Enter");
  expect(view.model.get("selected_batch_size")).toBe(33);
  await new Promise((r) => setTimeout(r, 0));
  expect(got).toHaveLength(1);
  expect(got[0]).toMatchObject({ text: "33", expected: "32" });
  // Nobody handled it and there is no notebook: the copyable fallback is shown.
  const notice = view.q("edit-status");
  expect(notice.hidden).toBe(false);
  expect(notice.dataset.via).toBe("manual");
  expect(view.q("copy-text").value).toBe("batch_size = 33");
});

test("(b) with a kernel, a changed cell is re-located by the kernel's AST answer", async () => {
  const report = loadReport("small");
  const current = report.source.code.replace("batch_size=32", "batch_size = 32  # spaced");
  const { cell, calls, shared } = sharedNotebook(report.source.cell_id, current);
  const listeners = new Set();
  const sent = [];
  const at = current.indexOf("32  # spaced");
  const model = {
    get: () => ({}),
    on: (name, cb) => name === "msg:custom" && listeners.add(cb),
    off: (name, cb) => listeners.delete(cb),
    send(msg) {
      sent.push(msg);
      // The kernel answers later, in UTF-16 offsets of the text it was sent.
      setTimeout(() => listeners.forEach((cb) => cb({ kind: "located", request: msg.request, ok: true, start_utf16: at, end_utf16: at + 2 })), 5);
    },
    widget_manager: { context: { model: { sharedModel: shared } } },
  };
  const result = await applyEdit({ el: document.createElement("div"), model, report, batch: 64 });
  expect(sent[0]).toMatchObject({ kind: "locate", code: current, batch_size: 64 });
  expect(result).toMatchObject({ ok: true, via: "shared-model" });
  expect(calls).toEqual(["stop", [at, at + 2, "64"], "stop"]);
  expect(cell.source).toContain("batch_size = 64  # spaced");
  expect(listeners.size).toBe(0); // the one-shot listener is gone
});

test("(b) a kernel refusal is shown and nothing is edited", async () => {
  const report = loadReport("small");
  const { calls, shared } = sharedNotebook(report.source.cell_id, `${report.source.code}\nx = 1\n`);
  const listeners = new Set();
  const model = {
    get: () => ({}),
    on: (_, cb) => listeners.add(cb),
    off: (_, cb) => listeners.delete(cb),
    send: (msg) => queueMicrotask(() => listeners.forEach((cb) => cb({ kind: "located", request: msg.request, ok: false, reason: "two candidates" }))),
    widget_manager: { context: { model: { sharedModel: shared } } },
  };
  const result = await applyEdit({ el: document.createElement("div"), model, report, batch: 64 });
  expect(result).toMatchObject({ ok: false, via: "manual", text: "batch_size = 64" });
  expect(result.message).toMatch(/two candidates/);
  expect(calls).toEqual([]);
});

// ---- re-locating in the CURRENT text before the edit (the user may have typed since) --------

/** A fake companion extension: answers reads with `source`, applies or refuses edits. */
function fakeExtension(source, { refuse = null } = {}) {
  const ext = { source, reads: 0, edits: [] };
  const onRead = (e) => {
    ext.reads += 1;
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

/** A fake model with a kernel: `answer(msg, current)` builds the kernel's "located" reply. */
function kernelModel(answer, extra = {}) {
  const listeners = new Set();
  const model = {
    sent: [],
    get: () => ({}),
    on: (name, cb) => name === "msg:custom" && listeners.add(cb),
    off: (_, cb) => listeners.delete(cb),
    send(msg) {
      model.sent.push(msg);
      const reply = answer(msg);
      if (reply) queueMicrotask(() => listeners.forEach((cb) => cb({ kind: "located", request: msg.request, ...reply })));
    },
    listeners,
    ...extra,
  };
  return model;
}


describe("(a) with the extension, the literal is re-located in the current text first", () => {
  let ext;
  afterEach(() => ext?.remove());

  test("unchanged cell: no kernel round trip, the profiled span is edited", async () => {
    const report = loadReport("small");
    ext = fakeExtension(report.source.code);
    const model = kernelModel(() => { throw new Error("not asked"); });
    const result = await applyEdit({ el: inDocument(), model, report, batch: 40 });
    expect(result).toMatchObject({ ok: true, via: "event" });
    expect(model.sent).toEqual([]);
    expect(ext.edits).toHaveLength(1);
    expect(ext.source).toBe(report.source.code.replace("batch_size=32", "batch_size=40"));
  });

  test("typed above the def: the kernel's AST answer gives the span, one edit", async () => {
    const report = loadReport("small");
    const typed = `# a line typed after profiling 🚀\n${report.source.code}`;
    ext = fakeExtension(typed);
    const at = typed.indexOf("32):");
    const model = kernelModel((msg) => ({ ok: true, start_utf16: at, end_utf16: at + 2, value: 32, replacement: String(msg.batch_size) }));
    const result = await applyEdit({ el: inDocument(), model, report, batch: 48 });
    expect(model.sent).toEqual([expect.objectContaining({ kind: "locate", code: typed, batch_size: 48 })]);
    expect(ext.edits).toEqual([expect.objectContaining({ start: at, end: at + 2, expected: "32", text: "48" })]);
    expect(result).toMatchObject({ ok: true, via: "event", message: "Set the batch size to 48 in the source cell (was 32). Ctrl+Z in that cell undoes it." });
    expect(ext.source).toBe(typed.replace("batch_size=32", "batch_size=48"));
    expect(model.listeners.size).toBe(0);
  });

  test("the kernel refuses (ambiguous): its reason is shown and nothing is dispatched", async () => {
    const report = loadReport("small");
    const typed = `${report.source.code}\ndef skyline_input_provider(batch_size=8):\n    pass\n`;
    ext = fakeExtension(typed);
    const reason = "ambiguous: `skyline_input_provider` is defined 2 times (lines 19, 31)";
    const model = kernelModel(() => ({ ok: false, reason }));
    const result = await applyEdit({ el: inDocument(), model, report, batch: 48 });
    expect(result).toMatchObject({ ok: false, via: "manual", text: "batch_size = 48" });
    expect(result.message).toBe(`Not edited: ${reason}. Set it by hand:`);
    expect(ext.edits).toEqual([]);
    expect(ext.source).toBe(typed);
  });

  test("no kernel: the line-based relocation is used", async () => {
    const report = loadReport("small");
    const typed = `import os\n${report.source.code}`;
    ext = fakeExtension(typed);
    const result = await applyEdit({ el: inDocument(), model: { get: () => ({}) }, report, batch: 64 });
    expect(result.ok).toBe(true);
    expect(ext.edits[0]).toMatchObject({ start: report.source.start_utf16 + 10, expected: "32" });
    expect(ext.source).toBe(typed.replace("batch_size=32", "batch_size=64"));
  });

  test("a second drag finds the literal the first one wrote", async () => {
    const report = loadReport("small");
    ext = fakeExtension(report.source.code);
    const el = inDocument();
    await applyEdit({ el, model: { get: () => ({}) }, report, batch: 100 });
    const second = await applyEdit({ el, model: { get: () => ({}) }, report, batch: 7 });
    expect(second.ok).toBe(true);
    expect(ext.edits.map((e) => [e.expected, e.text])).toEqual([["32", "100"], ["100", "7"]]);
    expect(ext.source).toBe(report.source.code.replace("batch_size=32", "batch_size=7"));
  });

  test("the extension refuses: the shared model is tried before the copyable text", async () => {
    const report = loadReport("small");
    ext = fakeExtension(report.source.code, { refuse: "No open notebook has a cell with id x." });
    const { cell, calls, shared } = sharedNotebook(report.source.cell_id, report.source.code);
    const model = { get: () => ({}), widget_manager: { context: { model: { sharedModel: shared } } } };
    const result = await applyEdit({ el: inDocument(), model, report, batch: 50 });
    expect(ext.edits).toHaveLength(1);
    expect(result).toMatchObject({ ok: true, via: "shared-model" });
    expect(calls.filter(Array.isArray)).toHaveLength(1);
    expect(shared.transacts).toBe(1);
    expect(cell.source).toContain("batch_size=50");
  });

  test("refused by both: the extension's reason, with the copyable line", async () => {
    const report = loadReport("small");
    ext = fakeExtension(report.source.code, { refuse: "The cell changed since it was profiled." });
    const result = await applyEdit({ el: inDocument(), model: { get: () => ({}) }, report, batch: 50 });
    expect(result).toMatchObject({ ok: false, via: "manual", text: "batch_size = 50" });
    expect(result.message).toBe("The cell changed since it was profiled. Set it by hand:");
  });
});

describe("reading and locating", () => {
  test("without the extension the shared model's text is read", () => {
    const { shared } = sharedNotebook("c1", "batch_size = 3\n");
    const model = { widget_manager: { context: { model: { sharedModel: shared } } } };
    expect(readCurrentSource(inDocument(), model, "c1")).toBe("batch_size = 3\n");
    expect(readCurrentSource(inDocument(), model, "missing")).toBe(null);
    expect(readCurrentSource(inDocument(), {}, null)).toBe(null);
  });

  test("an unreadable cell keeps the profiled span (the editor still checks it)", async () => {
    const span = { start: 4, end: 6, expected: "32", code: "x = 32\n" };
    expect(await locateCurrent({}, null, span, 9)).toEqual({ start: 4, end: 6, expected: "32" });
  });

  test("a kernel answer that does not point at digits is refused", async () => {
    const span = { start: 4, end: 6, expected: "32", code: "x = 32\n" };
    const model = kernelModel(() => ({ ok: true, start_utf16: 0, end_utf16: 1 }));
    expect((await locateCurrent(model, "# x\nx = 32\n", span, 9)).error).toMatch(/integer literal/);
  });

  test("a kernel that never answers times out to null; a non-live widget is not asked", async () => {
    const silent = kernelModel(() => null);
    expect(await locateInKernel(silent, "x = 1", 2, 10)).toBe(null);
    expect(silent.listeners.size).toBe(0);
    const handMade = kernelModel(() => { throw new Error("not asked"); }, { get: (k) => (k === "live" ? false : {}) });
    expect(await locateInKernel(handMade, "x = 1", 2)).toBe(null);
  });
});

test("widget: a kernel refusal shows its reason in edit-status", async () => {
  const report = loadReport("small");
  view = mount({ report });
  const ext = fakeExtension(`# typed\n${report.source.code}`);
  const reason = "ambiguous: `batch_size` is assigned 2 times at module level (lines 1, 4)";
  const kernel = kernelModel(() => ({ ok: false, reason }));
  const on = view.model.on;
  Object.assign(view.model, { send: kernel.send, off: kernel.off, on: (n, cb) => (n === "msg:custom" ? kernel.on(n, cb) : on(n, cb)) });
  key(view.q("throughput-bar"), "ArrowUp");
  key(view.q("throughput-bar"), "Enter");
  await new Promise((r) => setTimeout(r, 10));
  ext.remove();
  const notice = view.q("edit-status");
  expect(notice.hidden).toBe(false);
  expect(notice.querySelector(".sk-edit-message").textContent)
    .toBe(`Not edited: ${reason}. Set it by hand:`);
  expect(ext.edits).toEqual([]);
});
