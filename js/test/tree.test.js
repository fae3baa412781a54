import { afterEach, describe, expect, test } from "vitest";
import { lineKey, lineStats, ownsParameter, segmentLines, sourcesFor } from "../src/lines.js";
import { Predictor } from "../src/predict.js";
import {
  applyScale, indexTree, isDrillable, memorySegments, Navigator, nodeTime, scaleFor, sortDescending, timeSegments,
} from "../src/tree.js";
import { loadReport, mount } from "./helpers.js";

let view;
afterEach(() => {
  view?.unmount();
  view = null;
});

const sum = (xs) => xs.reduce((a, b) => a + b, 0);

describe("navigation", () => {
  const report = loadReport("large");
  const index = indexTree(report.tree);

  test("every path is indexed with its parent", () => {
    expect(index.byPath.get("layer3.2.conv2").name).toBe("Conv2d");
    expect(index.parentOf("layer3.2.conv2").path).toBe("layer3.2");
    expect(index.parentOf("")).toBeNull();
  });

  test("drill, back, top and breadcrumbs", () => {
    const nav = new Navigator(index);
    expect(nav.atTop).toBe(true);
    expect(nav.back()).toBe(false);
    expect(nav.drill("layer1")).toBe(true);
    expect(nav.drill("layer1.0")).toBe(true);
    expect(nav.drill("layer1.0.downsample")).toBe(true);
    expect(nav.crumbs().map((c) => c.name)).toEqual(["ResNet", "layer1", "layer1.0", "downsample"]);
    expect(nav.crumbs().map((c) => c.path)).toEqual(["", "layer1", "layer1.0", "layer1.0.downsample"]);
    expect(nav.back()).toBe(true);
    expect(nav.current.path).toBe("layer1.0");
    expect(nav.top()).toBe(true);
    expect(nav.current).toBe(index.root);
    expect(nav.top()).toBe(false);
  });

  test("drilling to a deep path builds the whole stack; leaves cannot be opened", () => {
    const nav = new Navigator(index);
    expect(nav.drill("layer4.2.bn3")).toBe(true);
    expect(nav.crumbs().map((c) => c.path)).toEqual(["", "layer4", "layer4.2", "layer4.2.bn3"]);
    expect(nav.drill("layer4.2.bn3/_native_batch_norm_legit#0")).toBe(false);
    expect(nav.drill("no.such.module")).toBe(false);
    expect(nav.current.path).toBe("layer4.2.bn3");
    expect(nav.goTo(1)).toBe(true);
    expect(nav.current.path).toBe("layer4");
    expect(isDrillable(index.byPath.get("untracked"))).toBe(false);
  });
});

describe("time segments", () => {
  test("sorted largest first and summing to the iteration time at the root", () => {
    const report = loadReport("large");
    const index = indexTree(report.tree);
    const level = timeSegments(report, index, index.root);
    const values = level.segments.map((s) => s.value);
    expect(values).toEqual([...values].sort((a, b) => b - a));
    expect(level.total).toBeCloseTo(report.iteration_ms, 6);
    expect(level.segments[0].path).toBe("layer3"); // six blocks: the largest module
    const untracked = level.segments.find((s) => s.kind === "untracked");
    expect(untracked.value).toBeCloseTo(report.untracked_ms, 9);
  });

  test("sortDescending is stable for ties", () => {
    const segs = [{ base: 1, id: "a" }, { base: 2, id: "b" }, { base: 1, id: "c" }];
    expect(sortDescending(segs).map((s) => s.id)).toEqual(["b", "a", "c"]);
  });

  test("negative untracked time is shown as negative, not clamped", () => {
    const report = loadReport("small");
    const node = report.tree.children.find((c) => c.kind === "untracked");
    node.forward_ms = -0.3;
    const index = indexTree(report.tree);
    const level = timeSegments(report, index, index.root);
    const seg = level.segments.find((s) => s.kind === "untracked");
    expect(seg.value).toBe(-0.3);
    expect(level.segments.at(-1)).toBe(seg);
    expect(level.total).toBeCloseTo(sum(level.segments.map((s) => s.value)), 12);
    expect(level.positive).toBeGreaterThan(level.total);
  });

  test("without an untracked node the report's untracked_ms becomes a segment", () => {
    const report = loadReport("small");
    report.tree.children = report.tree.children.filter((c) => c.kind !== "untracked");
    report.untracked_ms = -0.125;
    const index = indexTree(report.tree);
    const seg = timeSegments(report, index, index.root).segments.find((s) => s.kind === "untracked");
    expect(seg).toMatchObject({ path: "(untracked)", value: -0.125, node: null });
  });

  test("a module whose children do not add up gets an unattributed remainder", () => {
    const report = loadReport("small");
    const fc1 = report.tree.children.find((c) => c.path === "fc1");
    fc1.forward_ms += 0.5;
    const index = indexTree(report.tree);
    const level = timeSegments(report, index, fc1);
    expect(level.total).toBeCloseTo(nodeTime(fc1), 12);
    expect(level.segments.find((s) => s.name === "unattributed").value).toBeCloseTo(0.5, 12);
  });
});

describe("memory segments", () => {
  test("groups: weights, activations, gradients, then the single-segment categories, each sorted", () => {
    const report = loadReport("large");
    const index = indexTree(report.tree);
    const level = memorySegments(report, index, index.root);
    const cats = level.segments.map((s) => s.category);
    const firstAct = cats.indexOf("activations");
    expect(cats.slice(0, firstAct).every((c) => c === "weights")).toBe(true);
    expect(cats.lastIndexOf("weights")).toBeLessThan(firstAct);
    const firstGrads = cats.indexOf("grads");
    expect(cats.lastIndexOf("activations")).toBeLessThan(firstGrads);
    expect(cats.slice(-2).sort()).toEqual(["optimizer", "untracked"]);
    for (const cat of ["weights", "activations", "grads", "optimizer|untracked"]) {
      const vals = level.segments.filter((s) => cat.split("|").includes(s.category)).map((s) => s.value);
      expect(vals).toEqual([...vals].sort((a, b) => b - a));
    }
    // Everything categorized plus untracked is the measured peak.
    expect(level.total).toBe(report.peak_bytes);
  });

  test("a leaf module's own parameters are charged to it", () => {
    const report = loadReport("small");
    const index = indexTree(report.tree);
    const fc1 = index.byPath.get("fc1");
    const level = memorySegments(report, index, fc1);
    const own = level.segments.find((s) => s.category === "weights");
    expect(own).toMatchObject({ path: "fc1", value: fc1.weight_bytes, name: "fc1 (own)", own: true });
  });

  test("an opened module shows the gradients its parameters held at the peak", () => {
    // session 31's walkthrough: fc1 opened showed its parameters and none of their gradients
    const report = loadReport("small");
    const index = indexTree(report.tree);
    const fc1 = index.byPath.get("fc1");
    const level = memorySegments(report, index, fc1);
    expect(level.segments.find((s) => s.category === "grads")).toMatchObject({ path: "fc1", value: fc1.peak_grad_bytes, own: true });
    expect(fc1.peak_grad_bytes).toBe(fc1.grad_bytes);
    const root = memorySegments(report, index, index.root).segments.filter((s) => s.category === "grads");
    expect(root.map((s) => s.path)).toEqual(["fc1", "fc2"]);
    expect(root.reduce((a, s) => a + s.value, 0)).toBe(report.categories.find((c) => c.key === "grads").bytes);
  });

  test("a report whose tree has no gradients per module keeps them as one segment at the top", () => {
    // as the kernel reads a report written before the split (Categories.split_where)
    const report = loadReport("small");
    report.categories.find((c) => c.key === "grads").node_field = null;
    const index = indexTree(report.tree);
    const grads = memorySegments(report, index, index.root).segments.filter((s) => s.category === "grads");
    expect(grads).toHaveLength(1);
    expect(grads[0].value).toBe(report.categories.find((c) => c.key === "grads").bytes);
  });

  test("its tooltip names the module once, and says the bytes are its own", () => {
    view = mount({ report: loadReport("small") });
    const time = view.q("breakdown-time").querySelector('[data-node="fc1"]');
    time.dispatchEvent(new MouseEvent("dblclick", { bubbles: true }));
    const own = view.q("breakdown-memory").querySelector('[data-skyline="segment"][data-category="weights"]');
    own.dispatchEvent(new MouseEvent("mouseover", { bubbles: true, clientX: 5, clientY: 5 }));
    expect(view.q("tooltip").querySelector(".sk-tooltip-title").textContent).toBe("fc1 (Linear), its own \u2014 parameters");
  });

  test("negative untracked memory stays negative", () => {
    const report = loadReport("small");
    report.categories.find((c) => c.key === "untracked").bytes = -4096;
    const index = indexTree(report.tree);
    const seg = memorySegments(report, index, index.root).segments.find((s) => s.category === "untracked");
    expect(seg.value).toBe(-4096);
    expect(seg.path).toBe("untracked");
  });
});

describe("scaling with the predicted batch size", () => {
  const report = loadReport("small");
  const index = indexTree(report.tree);
  const predictor = new Predictor(report.models);

  test("the measured batch shows the measurement unchanged", () => {
    const scale = scaleFor(report, predictor, report.batch_size);
    expect(scale).toMatchObject({ predicted: false, timeFactor: 1, activationFactor: 1, peakBytes: null });
  });

  test("weights constant, activations proportional, untracked = model peak − the rest", () => {
    const level = memorySegments(report, index, index.root);
    const before = new Map(level.segments.map((s) => [s.key, s.value]));
    const scale = scaleFor(report, predictor, 128);
    applyScale(level, scale);
    for (const s of level.segments) {
      if (s.category === "weights") expect(s.value).toBe(before.get(s.key));
      if (s.category === "activations") expect(s.value).toBeCloseTo(before.get(s.key) * 4, 6);
    }
    expect(level.total).toBeCloseTo(predictor.predictPeakBytes(128), 3);
  });

  test("with categories measured at the samples, each follows its own line through them", () => {
    const measured = loadReport("small");
    const bytes = (key) => measured.categories.find((c) => c.key === key).bytes;
    const at = (n) => ({ weights: bytes("weights"), activations: bytes("activations") * n / 32, grads: bytes("grads") * (1 + (n - 32) / 64) });
    measured.samples = measured.samples.map((s) => ({ ...s, categories: at(s.batch_size) }));
    const idx = indexTree(measured.tree);
    const level = memorySegments(measured, idx, idx.root);
    const scale = scaleFor(measured, predictor, 128);
    expect(scale.categoryFactors.grads).toBeCloseTo(at(128).grads / bytes("grads"), 9);
    applyScale(level, scale);
    const total = (key) => level.segments.filter((s) => s.category === key).reduce((a, s) => a + s.value, 0);
    expect(total("grads")).toBeCloseTo(at(128).grads, 3); // not constant: the samples say it grows
    expect(total("activations")).toBeCloseTo(at(128).activations, 3);
    expect(total("weights")).toBeCloseTo(bytes("weights"), 3);
    expect(level.total).toBeCloseTo(predictor.predictPeakBytes(128), 3);
  });

  test("a remainder is placed by its sign at every scale: its base follows its value", () => {
    const negative = loadReport("small");
    negative.categories.find((c) => c.key === "untracked").bytes = -4096;
    const idx = indexTree(negative.tree);
    const level = memorySegments(negative, idx, idx.root);
    const untracked = level.segments.find((s) => s.category === "untracked");
    applyScale(level, scaleFor(negative, predictor, 128));
    expect(level.relayout).toBe(true);
    expect(untracked.base).toBe(untracked.value);
    expect(untracked.value).toBeGreaterThan(0);
    applyScale(level, scaleFor(negative, predictor, 200));
    expect(level.relayout).toBe(false);
    applyScale(level, scaleFor(negative, predictor, negative.batch_size));
    expect(level.relayout).toBe(true);
    expect(untracked.base).toBe(-4096);
  });

  test("times scale so the root level sums to the model's iteration time", () => {
    const level = timeSegments(report, index, index.root);
    applyScale(level, scaleFor(report, predictor, 256));
    expect(level.total).toBeCloseTo(predictor.predictIterationMs(256), 9);
  });
});

describe("source lines", () => {
  const report = loadReport("small");
  const index = indexTree(report.tree);
  const src = report.sources[0];
  const lineOf = (text) => src.code.split("\n").findIndex((l) => l.includes(text)) + 1;

  test("inclusive per-line time and memory within the level", () => {
    const stats = lineStats(index.root, report.weights, true);
    const train = stats.get(lineKey(src.file, lineOf("loss_fn(model(x), y).backward()")));
    const hidden = stats.get(lineKey(src.file, lineOf("x = self.act(self.fc1(x))")));
    expect(hidden.timeMs).toBeCloseTo(0.42 + 0.81 + 0.05 + 0.06, 9);
    expect(train.timeMs).toBeGreaterThan(hidden.timeMs); // the training line carries the forward pass
    const made = stats.get(lineKey(src.file, lineOf("self.fc1 = nn.Linear")));
    expect(made.weightBytes).toBe(2 * (784 * 512 + 512) * 4);
    expect(sourcesFor(report.sources, stats)).toEqual([src]);
  });

  test("drilled into fc2, only fc2's lines count", () => {
    const stats = lineStats(index.byPath.get("fc2"), report.weights, false);
    expect([...stats.values()].map((e) => e.line).sort((a, b) => a - b)).toEqual(
      [lineOf("self.fc2 = nn.Linear"), lineOf("return self.fc2(x)"), lineOf("loss_fn(model(x), y).backward()")].sort((a, b) => a - b));
  });

  test("segment lines and parameter ownership", () => {
    expect(ownsParameter("fc1", "fc1.weight", false)).toBe(true);
    expect(ownsParameter("fc1", "fc10.weight", false)).toBe(false);
    const seg = memorySegments(report, index, index.root).segments.find((s) => s.path === "fc1" && s.category === "weights");
    const keys = segmentLines(seg, report.weights);
    expect(keys.has(lineKey(src.file, lineOf("self.fc1 = nn.Linear")))).toBe(true);
    expect(keys.has(lineKey(src.file, lineOf("return self.fc2(x)")))).toBe(false);
  });
});
