// Categories are data: a report carrying a category this code has never heard of (the input
// batch in report_extra_category.json, written from Python by tests/fixtures/make_reports.py)
// is drawn, named in the legend, styled and scaled with no change to the widget.
import { afterEach, describe, expect, test } from "vitest";
import { drawnCategories, safeColor } from "../src/categories.js";
import { Predictor } from "../src/predict.js";
import { applyScale, indexTree, memorySegments, scaleFor } from "../src/tree.js";
import { loadReport, mount } from "./helpers.js";

let view;
afterEach(() => view?.unmount());

const legendItems = (v) => [...v.q("breakdown-memory").querySelectorAll(".sk-legend-item")];
const memorySeg = (v, category) => v.q("breakdown-memory").querySelector(`[data-skyline="segment"][data-category="${category}"]`);

describe("a category added in Python only", () => {
  const report = loadReport("extra_category");
  const inputs = report.categories.find((c) => c.key === "staging");

  test("the fixture really carries a category the default list does not", () => {
    expect(loadReport("small").categories.map((c) => c.key)).not.toContain("staging");
    expect(inputs).toMatchObject({ label: "staging copies", grows_with_batch: true, color: "#59a14f" });
  });

  test("renders its segment, in its colour, and its legend entry", () => {
    view = mount({ report });
    const seg = memorySeg(view, "staging");
    expect(seg).not.toBeNull();
    expect(seg.textContent).toBe("staging copies");
    expect(seg.style.getPropertyValue("--sk-seg")).toBe("#59a14f");
    expect(seg.dataset.texture).toBe("plain");
    expect(Number.parseFloat(seg.style.width)).toBeGreaterThan(0);
    const entry = legendItems(view).find((e) => e.dataset.category === "staging");
    expect(entry.textContent).toBe("staging copies");
    expect(entry.style.getPropertyValue("--sk-swatch")).toBe("#59a14f");
  });

  test("its tooltip names it", () => {
    view = mount({ report });
    memorySeg(view, "staging").dispatchEvent(new MouseEvent("mouseover", { bubbles: true, clientX: 5, clientY: 5 }));
    expect(view.q("tooltip").querySelector(".sk-tooltip-title").textContent).toBe("staging copies"); // named once
  });

  test("it grows with the batch, and the bar still adds up to the predicted peak", () => {
    const index = indexTree(report.tree);
    const level = memorySegments(report, index, index.root);
    expect(level.total).toBe(report.peak_bytes);
    const predictor = new Predictor(report.models);
    applyScale(level, scaleFor(report, predictor, 2 * report.batch_size));
    expect(level.segments.find((s) => s.category === "staging").value).toBe(2 * inputs.bytes);
    expect(level.total).toBeCloseTo(predictor.predictPeakBytes(2 * report.batch_size), 3);
  });
});

describe("the default categories", () => {
  test("the legend names what the report holds bytes of, in its order", () => {
    view = mount({ report: loadReport("large") });
    expect(legendItems(view).map((e) => e.textContent)).toEqual(["parameters", "activations", "gradients", "optimizer state", "other"]);
    expect(legendItems(view).map((e) => e.dataset.texture)).toEqual(["stripes", "plain", "hatch", "hatch", "hatch"]);
    // Colours of categories split over modules name the modules, not the category.
    expect(legendItems(view)[0].style.getPropertyValue("--sk-swatch")).toBe("");
  });

  test("a category shown with another joins its segments and its name", () => {
    const report = loadReport("small");
    Object.assign(report.categories.find((c) => c.key === "grads"), { shown_with: "weights", node_field: "grad_bytes" });
    const drawn = drawnCategories(report);
    expect(drawn.map((c) => c.key)).not.toContain("grads");
    expect(drawn[0]).toMatchObject({ label: "parameters + gradients", nodeFields: ["weight_bytes", "grad_bytes"] });
  });

  test("a colour that is not #rrggbb never reaches a style", () => {
    const report = loadReport("small");
    report.categories.find((c) => c.key === "untracked").color = "red; background: url(x)";
    view = mount({ report });
    expect(memorySeg(view, "untracked").style.getPropertyValue("--sk-seg")).toBe("");
    expect(safeColor("#12abEF")).toBe("#12abEF");
    expect(safeColor("#fff")).toBeNull();
  });
});

test("the optimizer opened holds its state: the memory its root segment showed", () => {
  const report = loadReport("large");
  const index = indexTree(report.tree);
  const state = report.categories.find((c) => c.key === "optimizer").bytes;
  const atRoot = memorySegments(report, index, index.root).segments.find((s) => s.category === "optimizer");
  expect(atRoot).toMatchObject({ value: state, path: "optimizer" }); // double-click opens it
  const opened = memorySegments(report, index, index.byPath.get("optimizer"));
  expect(opened.segments.map((s) => [s.name, s.category, s.value, s.node])).toEqual([["optimizer state", "optimizer", state, null]]);
  expect(opened.total).toBe(state);
  // a module's level shows no optimizer state
  expect(memorySegments(report, index, index.byPath.get("layer1")).segments.some((s) => s.category === "optimizer")).toBe(false);
});
