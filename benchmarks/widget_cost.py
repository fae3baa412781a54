"""What the widget's own drawing costs the profile it shows, with the browser on the kernel's cores.

A notebook user's browser often shares the machine with the kernel (a laptop, a 2-core VM, CI).
Whatever the page redraws during a profile is CPU the timed iterations do not get. This runs
the README's quickstart in a real JupyterLab (the test suite's isolated server) in Debian
chromium, then re-profiles it from the widget ``--profiles`` times, alternating two variants of
the page, interleaved so both see the same host:

* ``shipped``: the widget as built (its progress line changes text once a second);
* ``animated``: the same, plus a stylesheet that puts back what the widget drew before session
  8: a spinner turning at the frame rate and a bar easing between ticks (0.9 s transitions).

Per variant: how many profiles left dragging on (the fit trusted), the headline iteration time
(median and range), and the CPU seconds chromium used per second of profile.

    PYTHONPATH=$PWD python benchmarks/widget_cost.py [--profiles 24]
"""

from __future__ import annotations

import argparse
import os
import platform
import re
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import psutil

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests" / "browser"))
from conftest import CHROMIUM, CHROMIUM_ARGS, JupyterServer, NotebookPage  # noqa: E402
from playwright.sync_api import expect, sync_playwright  # noqa: E402
from test_cell_edit import _part  # noqa: E402

QUICKSTART = ROOT / "notebooks" / "quickstart.ipynb"
WIDGET = '.jp-OutputArea [data-skyline="root"]'
ANIMATED = """
.sk-status-line::before { content: ""; width: 12px; height: 12px; flex: none; border-radius: 50%;
  border: 2px solid #ccc; border-top-color: #1976d2; animation: sk-old-spin 0.9s linear infinite; }
@keyframes sk-old-spin { to { transform: rotate(360deg); } }
.sk-progress-fill { transition: width 0.9s linear; }
"""


def _cpu_s(processes: list[psutil.Process]) -> float:
    total = 0.0
    for process in processes:
        try:
            times = process.cpu_times()
        except psutil.Error:
            continue
        total += times.user + times.system
    return total


def _profile(widget, chromium: list[psutil.Process]) -> tuple[bool, float, float]:
    """Re-profile once; (dragging on, headline ms, chromium CPU s per s of profile)."""
    wall, cpu = time.monotonic(), _cpu_s(chromium)
    _part(widget, "reprofile").click()
    expect(_part(widget, "status")).to_be_visible()
    expect(_part(widget, "status")).to_be_hidden(timeout=120_000)
    share = (_cpu_s(chromium) - cpu) / (time.monotonic() - wall)
    on = _part(widget, "throughput-bar").get_attribute("aria-disabled") != "true"
    summary = _part(widget, "summary").filter(has_text="Iteration").inner_text()
    value, unit = re.search(r"([\d.,]+)\s*(ms|s)\b", summary).groups()
    ms = float(value.replace(",", "")) * (1000.0 if unit == "s" else 1.0)
    return on, ms, share


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profiles", type=int, default=24, help="re-profiles, both variants")
    args = parser.parse_args()
    results: dict[str, list[tuple[bool, float, float]]] = {"shipped": [], "animated": []}
    with tempfile.TemporaryDirectory() as base, sync_playwright() as playwright:
        server = JupyterServer("lab", Path(base))
        server.start()
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            shutil.copy(QUICKSTART, server.root / QUICKSTART.name)
            page = browser.new_page(viewport={"width": 1280, "height": 960})
            notebook = NotebookPage(page, server, "lab")
            notebook.open(QUICKSTART.name)
            notebook.run_all()
            widget = page.locator(WIDGET)
            expect(_part(widget, "breakdown-time")).to_be_visible()
            chromium = [p for p in psutil.Process().children(recursive=True)
                        if "chrom" in p.name()]  # fmt: skip
            style = None
            for i in range(args.profiles):
                variant = "animated" if i % 2 else "shipped"
                if variant == "animated":
                    style = page.add_style_tag(content=ANIMATED)
                elif style is not None:
                    style.evaluate("el => el.remove()")
                results[variant].append(_profile(widget, chromium))
        finally:
            browser.close()
            server.stop()
    print(f"# widget_cost: {platform.node()}, {os.cpu_count()} CPUs, load "
          f"{os.getloadavg()[0]:.2f}, {args.profiles} re-profiles of notebooks/quickstart.ipynb")
    print("variant   | dragging on | headline ms median (min-max) | chromium CPU s/s (median)")
    for variant, rows in results.items():
        ms = [r[1] for r in rows]
        print(f"{variant:9} | {sum(r[0] for r in rows):2} of {len(rows):2}     | "
              f"{statistics.median(ms):6.1f} ({min(ms):.1f}-{max(ms):.1f})"
              f"{'':12}| {statistics.median(r[2] for r in rows):.2f}")


if __name__ == "__main__":
    main()
