// The companion extension's edit protocol (js/labextension/edit.js), on a fake shared cell.
import { describe, expect, test } from "vitest";
import { applyEdit, findCell, invalidDetail } from "../labextension/edit.js";

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

const detail = (over = {}) => ({ cellId: "a", start: 13, end: 15, text: "64", expected: "32", ...over });

describe("applyEdit in the extension", () => {
  test("edits exactly the span, as one undo step of its own", () => {
    const cell = yCell("a", "batch_size = 32\nx = 1\n");
    expect(applyEdit(cell, detail())).toEqual({ ok: true, message: "Replaced \"32\" by \"64\"." });
    expect(cell.source).toBe("batch_size = 64\nx = 1\n");
    expect(cell.log).toEqual(["stop", [13, 15, "64"], "stop"]);
  });

  test("a slice that is not `expected` (the user typed since) is refused, untouched", () => {
    const cell = yCell("a", "# typed\nbatch_size = 32\n");
    const result = applyEdit(cell, detail());
    expect(result.ok).toBe(false);
    expect(result.message).toMatch(/^The cell changed since it was profiled: expected "32"/);
    expect(cell.source).toBe("# typed\nbatch_size = 32\n");
    expect(cell.log).toEqual([]);
  });

  test("invalid details are refused with a reason", () => {
    expect(invalidDetail(detail({ cellId: "" }))).toMatch(/no cell id/);
    expect(invalidDetail(detail({ start: 5, end: 2 }))).toMatch(/not a valid range/);
    expect(invalidDetail(detail(), 10)).toMatch(/runs past the end/);
    expect(invalidDetail(detail({ text: 64 }))).toMatch(/string/);
    expect(invalidDetail(detail(), 20)).toBe("");
  });
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
