"""A provider that refuses batch sizes above the user's (a dataset of 24 rows) and a model that
fails at batch 1 (batch norm over one sample): the profile of the user's batch stands, the
report names both refused sizes, and the throughput bar dragged up as far as it goes stops just
below the one, dragged down as far as it goes just above the other, in real JupyterLab 4 and
Notebook 7.

The newcomer's order: providers first, `%load_ext skyline_nb` + `%skyline` in a later cell,
default threads. The sample at 2× (32) is refused, the sizes below are measured (4, 8, 16),
the inputs alone narrow the refusal down to 25 and batch 1 is tried and refused, so the
drag's range is 2 … 24: the literal written into the cell and saved to disk is 24, then 2,
each time the one change.
"""

from __future__ import annotations

import pytest
from playwright.sync_api import expect
from test_cell_edit import _part, _press, _ready, _saved
from test_late_load import SHOWN, _kernel_value

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

PROVIDERS = '''import torch
from torch import nn

def skyline_model_provider():
    return nn.Sequential(nn.Linear(256, 2048), nn.BatchNorm1d(2048), nn.ReLU(),
                         nn.Linear(2048, 10))

def skyline_input_provider(batch_size=16):
    if batch_size > 24:
        raise ValueError(f"the dataset has 24 rows, not {batch_size}")
    return torch.randn(batch_size, 256), torch.randint(0, 10, (batch_size,))

def skyline_iteration_provider(model):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    def iteration(x, y):
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
    return iteration'''
FACTS = ("(lambda r: {'samples': sorted(s.batch_size for s in r.samples), "
         "'fails_at': r.models.fails_at, 'top': r.models.max_batch_size(), "
         "'fails_below': r.models.fails_below, 'bottom': r.models.min_batch_size(), "
         f"'warnings': r.warnings}})({SHOWN})")


def test_the_drag_stays_between_the_sizes_the_code_refuses(notebook):  # Lab and NB 7
    cells = {"providers": PROVIDERS, "profile": "%load_ext skyline_nb\n%skyline"}
    notebook.write(f"refused-{notebook.frontend}.ipynb", cells)
    notebook.open()
    notebook.run_all()
    widget = notebook.page.locator('.jp-OutputArea [data-skyline="root"]')
    _ready(widget, 16)
    facts = _kernel_value(notebook, FACTS)
    assert facts["samples"] == [4, 8, 16] and facts["fails_at"] == 25 and facts["top"] == 24
    assert facts["fails_below"] == 1 and facts["bottom"] == 2
    said = [w for w in facts["warnings"] if w.startswith("at batch size 25, the input provider")]
    assert len(said) == 1 and "(Cell In[1], line 8)" in said[0], facts
    assert said[0].endswith("the dataset has 24 rows, not 25 (at line 10): predictions stop at "
                            "batch size 24")
    said = [w for w in facts["warnings"] if w.startswith("at batch size 1, the iteration")]
    assert len(said) == 1 and "(Cell In[1], line 15)" in said[0], facts
    assert said[0].endswith("predictions start at batch size 2")
    notes = _part(widget, "warnings")  # opened as a user opens them
    notes.locator("summary").click()
    expect(notes).to_contain_text("predictions stop at batch size 24")

    seen = _drag(notebook, widget, -4)
    assert seen == sorted(seen) and seen[-1] == 24 and seen.count(24) > 10, seen
    assert int(_part(widget, "predicted-batch-size").text_content()) == 24
    expect(_part(widget, "extrapolated")).to_have_text(
        "The prediction is extrapolated beyond the measured 16: Measure at 24 adds it to the "
        "samples. The range ends here: your code raised at batch size 25 (see the notes).")
    assert _saved(notebook) == {**cells,
                                "providers": PROVIDERS.replace("batch_size=16)", "batch_size=24)")}
    seen = _drag(notebook, widget, 4)
    assert seen == sorted(seen, reverse=True) and min(seen) == 2 and seen.count(2) > 5, seen
    assert int(_part(widget, "predicted-batch-size").text_content()) == 2
    expect(_part(widget, "extrapolated")).to_contain_text("your code raised at batch size 1 ")
    assert _saved(notebook) == {**cells,
                                "providers": PROVIDERS.replace("batch_size=16)", "batch_size=2)")}


def _drag(notebook, widget, step_px: int) -> list[int]:
    """Press on the throughput bar and move ``step_px`` at a time (negative: up), 50 times:
    past the bar's top or bottom; then release. The batch sizes shown after each move."""
    page = notebook.page
    x, y, _, shown = _press(notebook, widget, "throughput")
    seen = []
    for step in range(1, 51):
        page.mouse.move(x, y + step_px * step)
        seen.append(int(shown.text_content()))
    page.mouse.up()
    return seen
