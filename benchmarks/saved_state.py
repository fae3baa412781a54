"""How big a notebook gets when it is saved with the widget's state (issue 17: ≤ 300 KB).

For each example model, a notebook that imports its providers and runs ``%skyline`` (with
predictions) is executed by nbclient in a real kernel with the widget state stored, as
JupyterLab's "Save Widget State Automatically" does, and written indented as JupyterLab writes
it; printed: the .ipynb's size and the widget state's share.

    python benchmarks/saved_state.py
"""

from __future__ import annotations

import json
import sys
import tempfile
from pathlib import Path

import nbformat
from nbclient import NotebookClient

ROOT = Path(__file__).resolve().parents[1]
MODELS = ("mlp", "cnn", "transformer", "lstm")


def saved_size(model: str, folder: Path) -> tuple[int, int]:
    notebook = nbformat.v4.new_notebook(cells=[
        nbformat.v4.new_code_cell(f"from skyline_nb.examples.{model} import *"),
        nbformat.v4.new_code_cell("%load_ext skyline_nb\n%skyline --device cpu"),
    ])
    NotebookClient(notebook, timeout=600, kernel_name="python3", store_widget_state=True,
                   resources={"metadata": {"path": str(ROOT)}}).execute()
    path = folder / f"{model}.ipynb"
    nbformat.write(notebook, path)  # indented, as JupyterLab writes notebooks
    state = json.dumps(notebook.metadata.get("widgets", {}), indent=1)
    return path.stat().st_size, len(state)


def main() -> None:
    print("| model | .ipynb | widget state |")
    print("|---|---|---|")
    with tempfile.TemporaryDirectory() as folder:
        for model in MODELS:
            total, state = saved_size(model, Path(folder))
            print(f"| {model} | {total / 1024:.0f} KiB | {state / 1024:.0f} KiB |", flush=True)


if __name__ == "__main__":
    sys.exit(main())
