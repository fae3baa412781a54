"""``make demo``: execute the example notebooks headless and write what a colleague can open.

For each notebook: the executed copy with its widget state saved (it renders again in JupyterLab
without re-running), and one standalone offline HTML page per Skyline widget in it (from the
report saved in that state). Prints the files, their sizes (the quickstart's saved state and
page must stay under 300 kB: they are what gets mailed around) and the run times.

The executed copies are signed with the user's notebook secret (what `jupyter trust` does):
they were produced on this machine from our own notebooks, and JupyterLab renders widget views
and HTML only from trusted outputs, so an unsigned copy would open with no widget.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path
from typing import Any

from skyline_nb.export.html import save_html

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_NOTEBOOKS = ("quickstart.ipynb", "transformer.ipynb", "lstm.ipynb")


def execute(path: Path, out_dir: Path, timeout: int = 600, trust: bool = False) -> Path:
    """Run ``path`` with nbclient (widget state stored) into ``out_dir``; returns the copy.

    ``trust`` signs the copy in the current user's notary (see the module docstring).
    """
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(path, as_version=4)
    client = NotebookClient(
        notebook, timeout=timeout, kernel_name="python3", store_widget_state=True,
        resources={"metadata": {"path": str(path.parent)}},
    )
    # torch's profiler (kineto) prints "USDT: profiler_start/stop" lines on the kernel's stdout,
    # which ipykernel would save as stream outputs of the profiled cell; level 99 silences them.
    client.execute(env={**os.environ, "KINETO_LOG_LEVEL": os.environ.get("KINETO_LOG_LEVEL", "99")})
    if trust:
        from nbformat.sign import NotebookNotary

        NotebookNotary().sign(notebook)
    target = out_dir / path.name
    nbformat.write(notebook, target)
    return target


def widget_state_bytes(notebook: dict[str, Any]) -> int:
    """Size of the saved widget state as stored in the .ipynb (compact JSON)."""
    state = notebook.get("metadata", {}).get("widgets", {})
    return len(json.dumps(state, separators=(",", ":")))


def widget_reports(notebook: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``report`` trait of every Skyline widget in a notebook's saved widget state (read
    back from its compact form)."""
    from skyline_nb.widget import report_from_wire

    state = notebook.get("metadata", {}).get("widgets", {}).get(
        "application/vnd.jupyter.widget-state+json", {}).get("state", {})
    reports = []
    for model in state.values():
        traits = model.get("state", {})
        report = report_from_wire(traits["report"]) if traits.get("report") else {}
        if "batch_size" in report and "_esm" in traits:
            reports.append(report)
    return reports


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--out", default="build", help="output folder (default: build)")
    parser.add_argument("notebooks", nargs="*", help="notebooks to run (default: the examples)")
    args = parser.parse_args(argv)
    out_dir = Path(args.out)
    out_dir.mkdir(parents=True, exist_ok=True)
    import nbformat

    paths = [Path(p) for p in args.notebooks] or [ROOT / "notebooks" / n for n in DEFAULT_NOTEBOOKS]
    for path in paths:
        start = time.perf_counter()
        executed = execute(path, out_dir, trust=True)
        elapsed = time.perf_counter() - start
        notebook = nbformat.read(executed, as_version=4)
        print(f"{executed}  {_kb(executed.stat().st_size)} "
              f"(widget state {_kb(widget_state_bytes(notebook))})  executed in {elapsed:.1f} s")
        reports = widget_reports(notebook)
        for i, report in enumerate(reports):
            suffix = f"-{i + 1}" if len(reports) > 1 else ""
            page = save_html(report, out_dir / f"{path.stem}{suffix}.html",
                             title=f"Skyline profile: {path.stem}")
            print(f"{page}  {_kb(page.stat().st_size)}")
    return 0


def _kb(size: int) -> str:
    return f"{size / 1000:.0f} kB"


if __name__ == "__main__":
    raise SystemExit(main())
