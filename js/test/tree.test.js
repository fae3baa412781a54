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

  test("a peak that moves from the optimizer's update to the backward: the backward samples' categories, drawn whole where the measured peak held none", () => {
    // A tabular model with Adam (session 56): at 64 the update's temporaries held the peak, from
    // 128 on the backward's activations; dragged to 588 the breakdown read 1.08 MiB, the curve 4.64.
    const moved = loadReport("small"); // measured at 32
    const [W, G, T, A, B] = [1628200, 1628200, 300000, 4000, 2000];
    const byKey = (key) => moved.categories.find((c) => c.key === key);
    Object.assign(byKey("activations"), { bytes: 0 });
    Object.assign(byKey("untracked"), { bytes: 0 }); // no remainder to hide a wrong total in
    Object.assign(byKey("optimizer_temporaries"), { bytes: T });
    const backward = (n) => W + G + (A + B) * n;
    moved.samples = moved.samples.map((s) => {
      const n = s.batch_size;
      const update = n === 32;
      return {
        ...s,
        peak_bytes: update ? W + G + T : backward(n),
        peak_by_phase: { backward: backward(n), optimizer: W + G + T },
        categories: update ? { weights: W, grads: G, optimizer_temporaries: T, activations: 0 }
          : { weights: W, grads: G, activations: A * n, backward_temporaries: B * n, optimizer_temporaries: 0 },
      };
    });
    moved.models = {
      ...moved.models,
      memory: { lines: [{ slope: 0, intercept: W + G + T, phase: "optimizer" }, { slope: A + B, intercept: W + G, phase: "backward" }], shape: "line" },
    };
    const movedPredictor = new Predictor(moved.models);
    expect(movedPredictor.canManipulate).toBe(true);
    const idx = indexTree(moved.tree);
    const level = memorySegments(moved, idx, idx.root);
    const whole = level.segments.filter((s) => s.whole).map((s) => s.category).sort();
    expect(whole).toEqual(["activations", "backward_temporaries"]);
    applyScale(level, scaleFor(moved, movedPredictor, moved.batch_size)); // measured: as it was
    expect(level.total).toBeCloseTo(W + G + T, 3);
    const total = (key) => level.segments.filter((s) => s.category === key).reduce((a, s) => a + s.value, 0);
    for (const n of [588, 100, 60]) { // beyond, between and below the backward samples
      applyScale(level, scaleFor(moved, movedPredictor, n));
      expect(movedPredictor.peakPhaseAt(n)).toBe("backward");
      expect(level.total).toBeCloseTo(movedPredictor.predictPeakBytes(n), 3);
      expect([total("activations"), total("backward_temporaries"), total("optimizer_temporaries")]).toEqual([A * n, B * n, 0]);
    }
    view = mount({ report: moved });
    const drawn = () => [...view.q("breakdown-memory").querySelectorAll('[data-skyline="segment"]')]
      .filter((el) => !el.classList.contains("sk-seg-none")).map((el) => el.dataset.category);
    expect(drawn()).not.toContain("activations"); // none measured at 32, none predicted there
    expect(drawn()).toContain("optimizer_temporaries");
  });

  test("beyond the samples the categories that grow scale together to the curve, none goes negative", () => {
    // The tabular model's own samples (session 56): within the backward its gradients fell from
    // 268,308 B at 256 to 5,140 at 512 as its activations more than doubled; their own lines,
    // the gradients' cut at 0, drew 30.2 MiB at 4,096 where the curve said 26.7.
    const tab = loadReport("small");
    const keys = tab.categories.map((c) => c.key);
    const sample = (batch_size, shares, categories) => {
      const peak = sum(keys.map((k) => categories[k] ?? 0)); // the categories add up to the peak
      return {
        batch_size, iteration_ms: 1 + batch_size / 100, peak_bytes: peak,
        peak_by_phase: Object.fromEntries(Object.entries(shares).map(([phase, share]) => [phase, share * peak])),
        categories: Object.fromEntries(keys.map((k) => [k, categories[k] ?? 0])),
      };
    };
    // weights and the measured gradients as the fixture's tree holds them (its modules' bytes),
    // the update's temporaries less than the model's, so that its backward holds the peak from 300
    const [W, O] = [tab.categories.find((c) => c.key === "weights").bytes, 649796];
    tab.batch_size = 64;
    tab.samples = [
      sample(64, { backward: 0.9, optimizer: 1 }, { weights: W, grads: W, optimizer: O, inputs: 17408, optimizer_temporaries: 100000, kernel_workspace: 12 }),
      sample(128, { backward: 1, optimizer: 0.9 }, { weights: W, activations: 417800, grads: 268308, optimizer: O, inputs: 34816, backward_temporaries: 262144 }),
      sample(256, { backward: 1, optimizer: 0.9 }, { weights: W, activations: 835592, grads: 268308, optimizer: O, inputs: 69632, backward_temporaries: 524288 }),
      sample(512, { backward: 1, optimizer: 0.9 }, { weights: W, activations: 2195464, grads: 5140, optimizer: O, inputs: 139264, backward_temporaries: 1048576 }),
    ];
    for (const c of tab.categories) c.bytes = tab.samples[0].categories[c.key];
    const peak = (i) => tab.samples[i].peak_bytes;
    const through = (i, j, extra) => {
      const slope = (peak(j) - peak(i)) / (tab.samples[j].batch_size - tab.samples[i].batch_size);
      return { slope, intercept: peak(i) - slope * tab.samples[i].batch_size, phase: "backward", ...extra };
    };
    tab.models = {
      ...tab.models, measured_range: [64, 512], max_batch_size: 4096, knee_batch_size: null,
      // the update's peak grows with its inputs (and the kernels' workspace) alone
      memory: { lines: [{ slope: 17420 / 64, intercept: peak(0) - 17420, phase: "optimizer" }, through(1, 2, { to: 256 }), through(2, 3, { from: 256 })], shape: "bend" },
    };
    const tabPredictor = new Predictor(tab.models);
    const idx = indexTree(tab.tree);
    const level = memorySegments(tab, idx, idx.root);
    const scale = scaleFor(tab, tabPredictor, 4096);
    applyScale(level, scale);
    expect(level.total).toBeCloseTo(tabPredictor.predictPeakBytes(4096), 3);
    expect(level.segments.every((seg) => seg.value >= 0)).toBe(true);
    expect(scale.categoryBytes.grads).toBe(5140); // as at 512: it does not grow with the batch
    // a profile whose samples reached 4,096 measured 17,563,656 B of activations there
    expect(Math.abs(scale.categoryBytes.activations / 17563656 - 1)).toBeLessThan(0.001);
    expect(tabPredictor.peakPhaseAt(300)).toBe("backward");
    applyScale(level, scaleFor(tab, tabPredictor, 300)); // between two: on the line through them
    expect(level.total).toBeCloseTo(tabPredictor.predictPeakBytes(300), 3);
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
