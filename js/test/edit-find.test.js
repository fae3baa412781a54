// A cell that ran before `%load_ext skyline_nb`: the kernel knows its text, not its id. The
// widget's applyEdit (js/src/edit.js) finds it by an exact, unique match of that text, through
// the REAL companion extension (js/labextension/index.js, activated on a notebook panel whose
// shared cells behave like JupyterLab's), else through the widget manager's shared model; both
// write with the one writer (js/shared/cells.js).
import { afterEach, beforeAll, describe, expect, test } from "vitest";
import plugin from "../labextension/index.js";
import { applyEdit } from "../src/edit.js";
import { locateLiteral, servedModel } from "./fake-kernel.js";
import { fakeModel, loadReport } from "./helpers.js";

const shell = { widgets: [] };
beforeAll(() => plugin.activate({ shell: { widgets: () => shell.widgets } }));
afterEach(() => {
  shell.widgets = [];
  document.body.replaceChildren();
});

function sharedCell(id, source) {
  return {
    id,
    source,
    getSource() {
      return this.source;
    },
    updateSource(start, end, text) {
      this.source = this.source.slice(0, start) + text + this.source.slice(end);
    },
  };
}

/** A notebook panel in the document holding `cells`; returns the shared cells and a node
 *  inside the panel where the widget renders. */
function openNotebook(cells) {
  const node = document.body.appendChild(document.createElement("div"));
  const shared = { cells: Object.entries(cells).map(([id, source]) => sharedCell(id, source)) };
  shell.widgets.push({ node, content: { model: { sharedModel: shared } } });
  return { cells: shared.cells, el: node.appendChild(document.createElement("div")) };
}

/** The report of a profile whose source cell ran before `%load_ext`: code known, id not. */
function lateReport() {
  const report = loadReport("small");
  report.source.cell_id = null;
  const { start_utf16, end_utf16, value } = report.source;
  const model = fakeModel({ report, edit_target: { cell_id: null, start_utf16, end_utf16, value } });
  return { report, model, code: report.source.code };
}

const texts = (cells) => cells.map((cell) => cell.source);

describe("through the companion extension", () => {
  test("the one cell holding the code is edited, and its id is kept for the next drag", async () => {
    const { report, model, code } = lateReport();
    const { cells, el } = openNotebook({ setup: "import torch", providers: code, profile: "%load_ext skyline_nb\n%skyline" });

    const first = await applyEdit({ el, model, report, batch: 48 });
    expect(first).toMatchObject({ ok: true, via: "event" });
    expect(texts(cells)).toEqual(["import torch", code.replace("batch_size=32", "batch_size=48"), "%load_ext skyline_nb\n%skyline"]);
    expect(model.get("edit_target")).toMatchObject({ cell_id: "providers", start_utf16: report.source.start_utf16 });
    // synced twice: the id, which the kernel adopts, and the batch size written by our hand
    expect(model.saved).toBe(2);
    expect(model.get("written_batch_size")).toBe(48);

    // The text no longer matches what ran: the id found the first time leads to the cell, and
    // the kernel locates the literal in its text now.
    await servedModel(model, locateLiteral);
    const second = await applyEdit({ el, model, report, batch: 64 });
    expect(second).toMatchObject({ ok: true, via: "event", message: expect.stringContaining("(was 48)") });
    expect(cells[1].source).toBe(code.replace("batch_size=32", "batch_size=64"));
  });

  test("two identical cells: refused as ambiguous, nothing edited", async () => {
    const { report, model, code } = lateReport();
    const { cells, el } = openNotebook({ a: code, b: code, profile: "%skyline" });
    const result = await applyEdit({ el, model, report, batch: 48 });
    expect(result).toMatchObject({ ok: false, via: "manual", text: "batch_size = 48" });
    expect(result.message).toBe("Not edited: 2 cells hold the code that defined the input provider, so which one to edit is ambiguous. Set it by hand:");
    expect(texts(cells)).toEqual([code, code, "%skyline"]);
    expect(model.get("edit_target").cell_id).toBe(null);
  });

  test("the cell changed since it ran: refused, nothing edited", async () => {
    const { report, model, code } = lateReport();
    const changed = `${code}# typed after the run\n`;
    const { cells, el } = openNotebook({ providers: changed, profile: "%skyline" });
    const result = await applyEdit({ el, model, report, batch: 48 });
    expect(result).toMatchObject({ ok: false, via: "manual" });
    expect(result.message).toMatch(/^Not edited: the cell that defined the input provider changed since it ran/);
    expect(texts(cells)).toEqual([changed, "%skyline"]);
  });

  test("only the widget's own notebook counts: the same code in another notebook is no rival", async () => {
    const { report, model, code } = lateReport();
    const other = openNotebook({ copy: code });
    const { cells, el } = openNotebook({ providers: code });
    expect(await applyEdit({ el, model, report, batch: 40 })).toMatchObject({ ok: true, via: "event" });
    expect(cells[0].source).toContain("batch_size=40");
    expect(other.cells[0].source).toBe(code);
  });
});

describe("through the shared model (no extension answers)", () => {
  function managed(cells) {
    const { report, model, code } = lateReport();
    const shared = { cells: cells(code).map(([id, source]) => sharedCell(id, source)), transact: (fn) => fn() };
    model.widget_manager = { context: { model: { sharedModel: shared } } };
    return { report, model, code, cells: shared.cells, el: document.body.appendChild(document.createElement("div")) };
  }

  test("the one cell holding the code is edited", async () => {
    const { report, model, code, cells, el } = managed((code) => [["setup", "x = 1"], ["providers", code]]);
    expect(await applyEdit({ el, model, report, batch: 24 })).toMatchObject({ ok: true, via: "shared-model" });
    expect(cells[1].source).toBe(code.replace("batch_size=32", "batch_size=24"));
    expect(model.get("edit_target").cell_id).toBe("providers");
  });

  test("two identical cells: refused as ambiguous", async () => {
    const { report, model, code, cells, el } = managed((code) => [["a", code], ["b", code]]);
    const result = await applyEdit({ el, model, report, batch: 24 });
    expect(result.message).toMatch(/^Not edited: 2 cells hold the code .* ambiguous/);
    expect(texts(cells)).toEqual([code, code]);
  });
});
