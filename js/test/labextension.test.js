// The one front-end writer (js/shared/cells.js) and the extension's cell finding
// (js/labextension/edit.js), on fake shared cells.
import { describe, expect, test } from "vitest";
import { findCell } from "../labextension/edit.js";
import { cellWithSource, invalidEdit, writeEdit } from "../shared/cells.js";

function yCell(id, source) {
  const log = [];
  return {
    id,
    source,
    log,
    undoManager: { stopCapturing: () => log.push("stop") },
    getSource() {
      return this.source;
    },
    updateSource(start, end, text) {
      log.push([start, end, text]);
      this.source = this.source.slice(0, start) + text + this.source.slice(end);
    },
  };
}

const edit = (over = {}) => ({ cellId: "a", start: 13, end: 15, text: "64", expected: "32", ...over });

describe("writeEdit", () => {
  test("edits exactly the span, as one undo step of its own", () => {
    const cell = yCell("a", "batch_size = 32\nx = 1\n");
    expect(writeEdit(cell, edit())).toEqual({ ok: true, message: "Replaced \"32\" by \"64\"." });
    expect(cell.source).toBe("batch_size = 64\nx = 1\n");
    expect(cell.log).toEqual(["stop", [13, 15, "64"], "stop"]);
  });

  test("UTF-16 offsets: an astral character before the literal counts two", () => {
    const cell = yCell("a", "# 🚀\nbatch_size = 32\n");
    const at = cell.source.indexOf("32");
    expect(at).toBe(18); // 17 code points before it, as Python counts
    expect(writeEdit(cell, edit({ start: at, end: at + 2 })).ok).toBe(true);
    expect(cell.source).toBe("# 🚀\nbatch_size = 64\n");
  });

  test("a slice that is not `expected` (the user typed since) is refused, untouched", () => {
    const cell = yCell("a", "# typed\nbatch_size = 32\n");
    const result = writeEdit(cell, edit());
    expect(result.ok).toBe(false);
    expect(result.message).toMatch(/^The cell changed since the batch size was located: expected "32"/);
    expect(cell.source).toBe("# typed\nbatch_size = 32\n");
    expect(cell.log).toEqual([]);
  });

  test("invalid edits are refused with a reason", () => {
    expect(invalidEdit(edit({ cellId: "" }))).toMatch(/no cell id/);
    expect(invalidEdit(edit({ start: 5, end: 2 }))).toMatch(/not a valid range/);
    expect(invalidEdit(edit(), 10)).toMatch(/runs past the end/);
    expect(invalidEdit(edit({ text: 64 }))).toMatch(/string/);
    expect(invalidEdit(edit(), 20)).toBe("");
    const cell = yCell("a", "short");
    expect(writeEdit(cell, edit()).message).toMatch(/runs past the end/);
    expect(cell.log).toEqual([]);
  });
});

test("cellWithSource: exactly one cell with exactly that text, or why not", () => {
  const cells = [yCell("a", "x = 1"), yCell("b", "y = 2"), yCell("c", "y = 2")];
  expect(cellWithSource(cells, "x = 1").cell.id).toBe("a");
  expect(cellWithSource(cells, "y = 2").error).toMatch(/^2 cells hold the code/);
  expect(cellWithSource(cells, "z = 3").error).toMatch(/changed since it ran/);
});

test("findCell: the notebook holding the event target, else the only one with that id", () => {
  const mk = (cells) => {
    const node = document.createElement("div");
    return { node, content: { model: { sharedModel: { cells } } } };
  };
  const a1 = yCell("a", "1");
  const a2 = yCell("a", "2");
  const one = mk([a1]);
  const two = mk([a2, yCell("b", "3")]);
  const target = two.node.appendChild(document.createElement("span"));
  expect(findCell([one, two], target, "a")).toBe(a2);
  expect(findCell([one, two], null, "b").source).toBe("3");
  expect(findCell([one, two], null, "a")).toBe(null); // two notebooks hold it: no guess
});
