"""A notebook whose training step keeps each iteration's outputs in a global list (for metrics,
as users write it): the widget's measurement notes say how much memory each iteration adds and
name the list, in real JupyterLab 4 (``profiler/retained.py``).

One frontend: the note is the widget's generic list of warnings, which ``test_layout.py`` checks
in both; this proves the kernel side finds the user's list among a notebook's globals.
"""

from __future__ import annotations

import pytest
from notebook_cells import mlp_cell
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

KEEPING = mlp_cell(256, 512, 10, 64).replace(
    "        opt.step()\n",
    "        opt.step()\n        predictions.append(model(x).detach())\n",
).replace("import torch\n", "import torch\n\npredictions = []\n", 1)


@pytest.mark.parametrize("frontend", ["lab"], indirect=True)
def test_a_list_that_keeps_every_iterations_outputs_is_named_in_the_widget(notebook):
    assert "predictions.append" in KEEPING
    notebook.write("kept-lab.ipynb", {"providers": KEEPING,
                                      "profile": "%load_ext skyline_nb\n%skyline"})
    notebook.open()
    notebook.run_all()
    assert "Traceback" not in notebook.output_text()
    notes = notebook.page.locator('.jp-OutputArea [data-skyline="warnings"]')
    notes.locator("summary").click()
    kept = notes.locator("li", has_text="more alive than the one before")
    expect(kept).to_have_count(1)
    # 64 × 10 floats of outputs each iteration, the list named as the cell calls it
    expect(kept).to_contain_text("keeps 2.50 KiB more")
    expect(kept).to_contain_text("the list 'predictions' (kept by the step) grows by 1 item")
