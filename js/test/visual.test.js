// What the widget draws, as the user met it: module colours that do not change between
// runs, values that do not break mid-number, knee labels that stay readable, short notes.
import { afterEach, describe, expect, test } from "vitest";
import { hashString, paletteColors } from "../src/breakdown.js";
import { formatInt, formatThroughput } from "../src/format.js";
import { Predictor } from "../src/predict.js";
import { loadReport, mount } from "./helpers.js";

let view;
afterEach(() => {
  view?.unmount();
  view = null;
});

const colorOf = (v, path) => v.q("breakdown-time").querySelector(`[data-node="${path}"]`).className.match(/sk-c\d/)?.[0];

describe("module colours", () => {
  test("FNV-1a, the same in every run", () => {
    expect(hashString("")).toBe(0x811c9dc5);
    expect(hashString("a")).toBe(0xe40c292c);
    expect(hashString("layer1.0.conv1")).toBe(hashString("layer1.0.conv1"));
  });

  test("a path's colour does not depend on the order or rank of its siblings", () => {
    const paths = ["stem", "blocks", "pool", "fc", "CrossEntropyLoss"];
    const one = paletteColors(paths);
    const other = paletteColors([...paths].reverse());
    for (const p of paths) expect(other.get(p)).toBe(one.get(p));
    expect(new Set(one.values()).size).toBe(paths.length); // siblings differ
  });

  test("siblings differ while the palette lasts, then colours repeat", () => {
    const ten = Array.from({ length: 10 }, (_, i) => `layer.${i}`);
    expect(new Set(paletteColors(ten).values()).size).toBe(10);
    const twelve = paletteColors([...ten, "layer.10", "layer.11"]);
    expect([...twelve.values()].every((c) => c >= 0 && c < 10)).toBe(true);
  });

  test("a module keeps its colour when a new run ranks it differently", () => {
    const first = loadReport("small");
    view = mount({ report: first });
    const before = { fc1: colorOf(view, "fc1"), fc2: colorOf(view, "fc2") };
    view.unmount();
    const second = loadReport("small");
    for (const child of second.tree.children) {
      if (child.path === "fc2") child.forward_ms *= 50; // fc2 now the largest
    }
    view = mount({ report: second });
    expect(view.q("breakdown-time").querySelector(".sk-seg").dataset.node).toBe("fc2");
    expect({ fc1: colorOf(view, "fc1"), fc2: colorOf(view, "fc2") }).toEqual(before);
    expect(before.fc1).not.toBe(before.fc2);
  });

  test("the legend says which categories are drawn in module colours", () => {
    view = mount({ report: loadReport("cnn") });
    const items = [...view.q("legend").children].map((e) => [e.dataset.category, e.dataset.coloring]);
    expect(items).toContainEqual(["activations", "module"]);
    expect(items).toContainEqual(["optimizer", "category"]);
  });
});

describe("the key-metric bars", () => {
  test("a value is its number over its unit; the text reads as one", () => {
    view = mount({ report: loadReport("cnn") });
    const value = view.q("throughput-bar").parentElement.querySelector(".sk-bar-value");
    expect(value.querySelector(".sk-bar-number").textContent).toMatch(/^[\d,.]+$/);
    expect(value.querySelector(".sk-bar-unit").textContent).toBe("samples/s");
    expect(value.textContent).toBe(formatThroughput(loadReport("cnn").throughput));
  });

  test("the scale is two unbroken lines: the top, and the batch range", () => {
    const report = loadReport("cnn");
    const p = new Predictor(report.models);
    view = mount({ report });
    const lines = [...view.q("throughput-scale").querySelectorAll(".sk-line")].map((e) => e.textContent);
    expect(lines).toEqual([`max ${formatThroughput(p.maxThroughput)}`, `up to batch ${formatInt(p.maxBatchSize())}`]);
    expect(view.q("throughput-scale").title).toMatch(/^The bar's top/);
  });

  test("the knee: a line at its value and a label with the batch size, grouped", () => {
    const report = loadReport("cnn");
    report.models.knee_batch_size = 1000;
    view = mount({ report });
    const track = view.q("throughput-bar");
    expect(track.querySelector(".sk-bar-knee-label").textContent).toBe("knee 1,000");
    expect(track.style.getPropertyValue("--sk-knee")).toMatch(/^\d+(\.\d+)?%$/);
    expect(track.querySelector('[data-skyline="knee"]').title).toMatch(/^Knee at batch size 1,000:/);
  });
});

describe("the profiler's notes", () => {
  const notes = [
    "the samples at batch size 64, 128 were timed while other processes kept the CPU busy",
    "the iteration at <img src=x onerror=alert(1)> returned a NaN/inf loss",
  ];

  test("one closed line: how many and the start of the first; the full texts inside", () => {
    const report = loadReport("small");
    report.warnings = notes;
    view = mount({ report });
    const box = view.q("warnings");
    expect(box.tagName).toBe("DETAILS");
    expect(box.open).toBe(false);
    expect(box.querySelector(".sk-warnings-count").textContent).toBe("2 notes on this measurement");
    expect(box.querySelector(".sk-warnings-first").textContent).toBe(notes[0]);
    expect([...box.querySelectorAll("li")].map((e) => e.textContent)).toEqual(notes);
    expect(box.querySelector("img")).toBeNull();
  });

  test("a single note says so", () => {
    const report = loadReport("small");
    report.warnings = [notes[0]];
    view = mount({ report });
    expect(view.q("warnings").querySelector(".sk-warnings-count").textContent).toBe("Note on this measurement");
  });
});
