"""How often the issue's own notebook keeps its drag: issue 12's MLP, profiled in a real notebook.

Issue 12's notebook: one cell with a 2-layer MLP (Linear 256→512, ReLU, Linear 512→10, SGD,
cross entropy; ~0.7 ms steps on 2 cores) and its providers, a later cell `%load_ext
skyline_nb` + `%skyline`, default torch threads. In a terminal its curve is trusted in every
profile; in a notebook the browser and the server draw on the kernel's cores, and whatever
they draw while iterations are timed scatters the samples. This runs that notebook in the test
suite's isolated JupyterLab (or Notebook 7) in Debian chromium, re-profiles it from the widget
``--profiles`` times in all, and prints for each profile whether dragging stayed on, its
samples (read from the kernel out of band, as the browser tests do) and, when off, the reason.
It measures the code as checked out: an A/B alternates runs over two checkouts. ``--threads
N`` sets torch's thread count in a first cell; ``--load`` runs it all beside one spinning
process (``spinner.py``); ``--probe`` prints what each timing saw (``timing_probe.py``).

    PYTHONPATH=$PWD python benchmarks/notebook_drag.py [--profiles 12] [--frontend notebook7]
    PYTHONPATH=$PWD python benchmarks/notebook_drag.py --threads 1 --load
    PYTHONPATH=$PWD python benchmarks/notebook_drag.py --frontend notebook7 --probe
"""

from __future__ import annotations

import argparse
import contextlib
import os
import platform
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "tests" / "browser"))
from conftest import CHROMIUM, CHROMIUM_ARGS, FRONTENDS, JupyterServer, NotebookPage  # noqa: E402
from notebook_cells import mlp_cell  # noqa: E402
from playwright.sync_api import expect, sync_playwright  # noqa: E402
from spinner import spinning  # noqa: E402
from test_cell_edit import _part  # noqa: E402
from test_late_load import SHOWN, _kernel_value  # noqa: E402

BATCH = 16
CELLS = {"providers": mlp_cell(256, 512, 10, BATCH).rstrip("\n"),
         "profile": "%load_ext skyline_nb\n%skyline"}
WIDGET = '.jp-OutputArea [data-skyline="root"]'
FACTS = ("(lambda r: (r.models.can_manipulate, r.models.reason, "
         "[(s.batch_size, round(s.iteration_ms, 3)) for s in r.samples], "
         "any('pace changed' in w for w in r.warnings)))(" + SHOWN + ")")
PROBE = (f"import sys\nsys.path.insert(0, {str(ROOT / 'benchmarks')!r})\n"
         "import timing_probe\ntiming_probe.install()")
TAKE = "__import__('timing_probe').take()"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--profiles", type=int, default=12, help="profiles, the first included")
    parser.add_argument("--frontend", choices=sorted(FRONTENDS), default="lab")
    parser.add_argument("--threads", type=int, default=None, help="torch threads")
    parser.add_argument("--load", action="store_true", help="beside one spinning process")
    parser.add_argument("--probe", action="store_true",
                        help="print each timing's record (timing_probe.py) under its profile")
    args = parser.parse_args()
    cells = CELLS if args.threads is None else {
        "threads": f"import torch\ntorch.set_num_threads({args.threads})", **CELLS}
    cells = {"probe": PROBE, **cells} if args.probe else cells
    rows = []
    with (tempfile.TemporaryDirectory() as base, sync_playwright() as playwright,
          spinning(False) if args.load else contextlib.nullcontext()):
        server = JupyterServer(FRONTENDS[args.frontend][0], Path(base))
        server.start()
        browser = playwright.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            notebook = NotebookPage(page, server, args.frontend)
            notebook.write("issue12.ipynb", cells)
            notebook.open()
            notebook.run_all()
            widget = page.locator(WIDGET)
            for i in range(args.profiles):
                if i:
                    _part(widget, "reprofile").click()
                    expect(_part(widget, "status")).to_be_visible()
                    expect(_part(widget, "status")).to_be_hidden(timeout=120_000)
                expect(_part(widget, "predicted-batch-size")).to_have_text(str(BATCH),
                                                                           timeout=120_000)
                rows.append((*_kernel_value(notebook, FACTS),
                             _kernel_value(notebook, TAKE) if args.probe else []))
            notebook.shut_down_kernel()
        finally:
            browser.close()
            server.stop()
    print(f"# notebook_drag: {platform.node()}, {os.cpu_count()} CPUs, {args.frontend}, "
          f"threads {args.threads or 'default'}, {'loaded' if args.load else 'quiet'}, "
          f"{args.profiles} profiles of issue 12's MLP at batch {BATCH}")
    if args.probe:
        print("# probe: start s, wall ms, iterations, median ms, waited, kernel CPU ms, "
              "run-queue ms; the headline first")
    for i, (on, reason, samples, rebased, records) in enumerate(rows):
        times = " ".join(f"{n}:{ms:.3f}" for n, ms in samples)
        print(f"{i:2} {'on ' if on else 'OFF'} {times}" + (" (scaled: pace)" if rebased else "")
              + ("" if on else f" | {reason}"))
        for record in records:
            print("     ", record)
    print(f"dragging on in {sum(row[0] for row in rows)} of {len(rows)}: "
          + "".join("." if row[0] else "X" for row in rows))


if __name__ == "__main__":
    main()
