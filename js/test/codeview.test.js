// The code view (js/src/codeview.js, lines.js): what its head and each line's marker say.
import { afterEach, expect, test } from "vitest";
import { formatBytes } from "../src/format.js";
import { loadReport, mount } from "./helpers.js";

let view;
afterEach(() => view?.unmount());

test("the code view says its line totals are inclusive and where backward is, and names memory as the breakdown does", () => {
  view = mount({ report: loadReport("small") });
  expect(view.q("code-view").querySelector(".sk-code-head").textContent).toBe(
    "Source of MLP: time and memory per line \u00b7 inclusive: a line holds what it calls, so lines add up to more than the whole; an op's backward counts on the line of its forward; memory: the most its ops hold saved for backward at once (a line run in a loop whose runs free theirs in turn holds one run's), plus parameters, gradients and optimizer state created there");
  const titles = view.qa("line-marker").map((m) => m.title);
  expect(titles.length).toBeGreaterThan(0);
  for (const title of titles) {
    expect(title).toMatch(/\ntime .+, with what it calls \(.+% of this level\)\n/);
    expect(title).toMatch(/\nsaved for backward .+, parameters \+ gradients created here .+ \(.+% of this level's memory\)/);
  }
});

test("the code view charges the optimizer's state to the line that runs the step", () => {
  const report = loadReport("large");
  const state = report.categories.find((c) => c.key === "optimizer").bytes;
  view = mount({ report });
  const cell = report.sources[0].file; // the cell whose line 20 calls optimizer.step()
  const marker = (v) => v.qa("line-marker").find((m) => m.dataset.line === "20" && m.closest(".sk-code-file").dataset.file === cell);
  const step = marker(view);
  expect(step.title).toContain(`, optimizer state ${formatBytes(state)} (`);
  // opened, the optimizer's level: its one line holds its state, all of the level's memory
  view.q("breakdown-memory").querySelector('[data-skyline="segment"][data-category="optimizer"]')
    .dispatchEvent(new MouseEvent("dblclick", { bubbles: true }));
  expect(view.q("breadcrumb").textContent).toMatch(/SGD$/);
  expect(marker(view).title).toContain(`, optimizer state ${formatBytes(state)} (100.0% of this level's memory)`);
});
