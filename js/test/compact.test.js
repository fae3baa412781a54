import { deflateSync } from "node:zlib";
import { afterEach, describe, expect, test } from "vitest";
import { COMPACT_PREFIX, inflateReport, isCompact } from "../src/compact.js";
import { loadReport, mount } from "./helpers.js";

let view;
afterEach(() => view?.unmount());

const compact = (report) => COMPACT_PREFIX + deflateSync(Buffer.from(JSON.stringify(report))).toString("base64");
const settle = () => new Promise((resolve) => setTimeout(resolve, 50));

describe("the compact report trait", () => {
  test("inflates to the report it was made from", async () => {
    const report = loadReport("large");
    const value = compact(report);
    expect(isCompact(value)).toBe(true);
    expect(isCompact(report)).toBe(false);
    expect(await inflateReport(value)).toEqual(report);
    expect(value.length).toBeLessThan(JSON.stringify(report).length / 5);
  });

  test("a widget draws a compact report as it draws the object", async () => {
    const report = loadReport("small");
    view = mount({ report: compact(report) });
    await settle();
    expect(view.q("breakdown-memory")).not.toBeNull();
    expect(view.el.textContent).toContain(report.tree.name);
  });

  test("a compact report that cannot be read says so", async () => {
    view = mount({ report: `${COMPACT_PREFIX}bm90IGRlZmxhdGU=` });
    await settle();
    expect(view.q("error").textContent).toMatch(/^Cannot read this report/);
  });
});
