"""A drag in the widget rewrites the batch size in the source cell (issue 6, "Editing the source
cell"), in real JupyterLab 4 and Notebook 7 with a real kernel profiling a small MLP on CPU.

Every check reads the notebook back from disk after Ctrl+S: the cell that defines the providers
must differ from what was written only in the characters of the batch-size literal, and that
literal must be the batch size the widget displayed. The edits go through the companion
extension (path (a)); the widget re-locates the literal in the cell's current text first, by
asking the kernel's AST locator when the user typed since profiling.

Time: each test starts a kernel and profiles once (torch import plus about 5 s of sampling on
one thread): 10-20 s a test, about 2 minutes for the file on a busy 2-core machine. The drag /
memory / undo test and the typed-then-ambiguous test run in both front ends; the `%%skyline`
and module-variable variants run in JupyterLab only (they differ from the first test only in
the kernel's locating, which does not depend on the front end).
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

pytestmark = [pytest.mark.browser, pytest.mark.timeout(150)]

# One torch thread: on a busy 2-core machine two threads contend and the iteration time stops
# growing with the batch size, which would turn the predictions (and so the drag) off.
HEADER = "import torch\nfrom torch import nn\n\ntorch.set_num_threads(1)\n"
MODEL = (
    "\n\ndef skyline_model_provider():\n"
    "    return nn.Sequential(nn.Linear(256, 1024), nn.ReLU(), nn.Linear(1024, 1024), nn.ReLU(),\n"
    "                         nn.Linear(1024, 4))\n"
)
INPUT_DEFAULT = (
    "\n\ndef skyline_input_provider(batch_size=32):  # batch_size = 3 in a comment\n"
    "    return torch.randn(batch_size, 256), torch.randint(0, 4, (batch_size,))\n"
)
INPUT_GLOBAL = (
    "\n\ndef skyline_input_provider():\n"
    "    return torch.randn(batch_size, 256), torch.randint(0, 4, (batch_size,))\n"
)
ITERATION = (
    "\n\ndef skyline_iteration_provider(model):\n"
    "    optimizer = torch.optim.SGD(model.parameters(), lr=0.01)\n"
    "    loss_fn = nn.CrossEntropyLoss()\n\n"
    "    def iteration(x, y):\n"
    "        optimizer.zero_grad()\n"
    "        loss_fn(model(x), y).backward()\n"
    "        optimizer.step()\n\n"
    "    return iteration\n"
)
PROVIDERS = HEADER + MODEL + INPUT_DEFAULT + ITERATION
PROVIDERS_VAR = HEADER + "\nbatch_size = 32\n" + MODEL + INPUT_GLOBAL + ITERATION
BUDGET = "--memory-budget 16MiB"  # the memory bar then spans a usable range of batch sizes
SETUP = "%load_ext skyline_nb"
LITERAL = re.compile(r"(?<=batch_size=)32\b|(?<=^batch_size = )32\b", re.MULTILINE)


def _with_literal(code: str, value: int | str) -> str:
    """`code` with its one batch-size literal (32) replaced by `value`."""
    assert len(LITERAL.findall(code)) == 1, code
    return LITERAL.sub(str(value), code)


def _part(widget, name: str):
    return widget.locator(f'[data-skyline="{name}"]')


READY_ATTEMPTS = 5


def _ready(widget, batch: int) -> None:
    """Wait for the profile; when noise turned the predictions off, Re-profile (4 times at
    most): these tests are about editing the cell, not about how well the models fit. (With
    chromium and the server on the same 2 cores a kernel can be starved for seconds: a CI run
    saw 3 profiles in a row at 4x the usual iteration time, R² 0.85, dragging off with the
    reason shown — the right answer for the user, not for an editing test.)"""
    for attempt in range(READY_ATTEMPTS):
        expect(_part(widget, "predicted-batch-size")).to_have_text(str(batch), timeout=60_000)
        bar = _part(widget, "throughput-bar")
        if attempt == READY_ATTEMPTS - 1 or bar.get_attribute("aria-disabled") != "true":
            break
        _part(widget, "reprofile").click()
        expect(_part(widget, "status")).to_be_visible()
        expect(_part(widget, "status")).to_be_hidden(timeout=60_000)
    if bar.get_attribute("aria-disabled") == "true":
        reason = _part(widget, "drag-reason")
        pytest.fail(f"dragging stayed off after {READY_ATTEMPTS} profiles: "
                    f"{reason.inner_text() if reason.count() else 'no reason shown'}")


def _open(notebook, name: str, cells: dict[str, str]) -> Any:
    """Write, open and run all; return the widget once its predictions can be dragged."""
    notebook.write(f"{name}-{notebook.frontend}.ipynb", cells)
    notebook.open()
    notebook.run_all()
    widget = notebook.page.locator('.jp-OutputArea [data-skyline="root"]')
    _ready(widget, 32)
    assert "Traceback" not in notebook.output_text(), notebook.output_text()
    return widget


def _press(notebook, widget, bar: str) -> tuple[float, float, dict[str, float], Any]:
    """Press the mouse at the middle of the `bar` bar, scrolled into view: its centre (x, y),
    its box and the batch size shown (a locator), for a drag to move from there."""
    handle = _part(widget, f"{bar}-bar")
    handle.scroll_into_view_if_needed()
    box = handle.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    notebook.page.mouse.move(x, y)
    notebook.page.mouse.down()
    return x, y, box, _part(widget, "predicted-batch-size")


def _drag(notebook, widget, bar: str, dy: float, wanted) -> int:
    """Drag the bar by dy-pixel moves (negative = up) until `wanted(batch shown)`; release.

    Drags are relative and start from the MEASURED value, which noise puts a little off the
    fitted line, so the first pixels may pick a batch size on the other side of the profiled
    one: the drag goes on (at least 4 moves, at most 60) until the batch size is as wanted.
    """
    page = notebook.page
    x, y, _, shown = _press(notebook, widget, bar)
    for i in range(1, 61):
        page.mouse.move(x, y + dy * i)
        if i >= 4 and wanted(int(shown.text_content())):
            break
    page.mouse.up()
    batch = int(shown.text_content())
    assert wanted(batch), f"dragging the {bar} bar by {dy} px steps never gave a wanted batch"
    return batch


def _edit_status(widget, pattern: str, via: str) -> str:
    """Wait for the edit notice to match; `via` says which way it went ("event" = extension)."""
    status = _part(widget, "edit-status")
    expect(status).to_be_visible()
    expect(status).to_contain_text(re.compile(pattern))
    expect(status).to_have_attribute("data-via", via)
    return status.inner_text()


def _edited(widget, was: int, now: int) -> None:
    _edit_status(widget, rf"Set the batch size to {now} in the source cell \(was {was}\)", "event")


def _sources(nb: dict[str, Any]) -> dict[str, str]:
    return {cell["id"]: "".join(cell["source"]) for cell in nb["cells"]}


def _saved(notebook) -> dict[str, str]:
    return _sources(notebook.save())


def _editor(notebook, cells: dict[str, str], cell_id: str):
    return (
        notebook.page.locator(".jp-Notebook .jp-Cell")
        .nth(list(cells).index(cell_id))
        .locator(".cm-content")
    )


def _type_in(notebook, cells: dict[str, str], cell_id: str, where: str, text: str) -> None:
    """Click into a cell's editor and insert text at its start or end (no auto-indent)."""
    editor = _editor(notebook, cells, cell_id)
    editor.scroll_into_view_if_needed()
    editor.click()
    notebook.page.keyboard.press("Control+Home" if where == "start" else "Control+End")
    notebook.page.keyboard.insert_text(text)


# The drags go along the memory bar: the memory line is fitted from allocations, exact at every
# load, while on a loaded 2-core CI box a noisy time line (samples taken while the browser and
# the server compete for the cores) can flatten or turn the throughput bar's direction around
# (seen: dragging throughput up picked batch 5). The throughput drag is proven on a recorded
# report in test_widget.py and in vitest.
def test_drag_up_then_down_edits_the_literal_and_each_undoes(notebook):  # Lab and Notebook 7
    cells = {"setup": SETUP, "providers": PROVIDERS, "profile": f"%skyline {BUDGET}"}
    widget = _open(notebook, "edit-drag", cells)

    up = _drag(notebook, widget, "memory", -4, lambda b: b > 32)
    _edited(widget, 32, up)
    saved = _saved(notebook)
    assert saved == {**cells, "providers": _with_literal(PROVIDERS, up)}

    down = _drag(notebook, widget, "memory", 3, lambda b: b < up)
    _edited(widget, up, down)
    assert _saved(notebook) == {**cells, "providers": _with_literal(PROVIDERS, down)}

    # One drag = one undo step in the cell: Ctrl+Z twice walks back to the original text.
    _editor(notebook, cells, "providers").click()
    notebook.page.keyboard.press("Control+z")
    assert _saved(notebook)["providers"] == _with_literal(PROVIDERS, up)
    _editor(notebook, cells, "providers").click()
    notebook.page.keyboard.press("Control+z")
    assert _saved(notebook) == cells


@pytest.mark.parametrize("variant", ["cell-magic", "module-variable"])  # Lab and Notebook 7
def test_cell_magic_and_module_variable(notebook, variant):
    if variant == "cell-magic":
        source = f"%%skyline {BUDGET}\n" + PROVIDERS
        cells = {"setup": SETUP, "providers": source}
    else:
        source = PROVIDERS_VAR
        cells = {"setup": SETUP, "providers": source,
                 "profile": f"%skyline --batch-size-var batch_size {BUDGET}"}  # fmt: skip
    widget = _open(notebook, f"edit-{variant}", cells)
    up = _drag(notebook, widget, "memory", -4, lambda b: b > 32)
    _edited(widget, 32, up)
    assert _saved(notebook) == {**cells, "providers": _with_literal(source, up)}


def test_typing_before_the_drag_then_an_ambiguous_cell_is_refused(notebook):  # Lab and NB 7
    cells = {"setup": SETUP, "providers": PROVIDERS, "profile": f"%skyline {BUDGET}"}
    widget = _open(notebook, "edit-typed", cells)

    # A line typed above the def (not run): the kernel re-locates the literal by AST.
    comment = "# the batch size below is tuned with skyline\n"
    _type_in(notebook, cells, "providers", "start", comment)
    up = _drag(notebook, widget, "memory", -4, lambda b: b > 32)
    _edited(widget, 32, up)
    typed = comment + _with_literal(PROVIDERS, up)
    assert _saved(notebook) == {**cells, "providers": typed}

    # A second provider def makes the target ambiguous: refused, with the kernel's reason, and
    # the cell keeps exactly what was typed.
    _type_in(
        notebook,
        cells,
        "providers",
        "end",
        "def skyline_input_provider(batch_size=8): return None\n",
    )
    before = _saved(notebook)
    assert before["providers"].startswith(typed) and before["providers"].count("batch_size=8") == 1
    down = _drag(notebook, widget, "memory", 3, lambda b: b < up)
    message = _edit_status(
        widget, r"Not edited: ambiguous: `skyline_input_provider` is defined 2", "manual"
    )
    assert "Set it by hand" in message
    expect(_part(widget, "copy-text")).to_have_value(f"batch_size = {down}")
    # its underscore shows: at the input's default line height a 1x display clipped it away
    line, size = _part(widget, "copy-text").evaluate(
        "e => [getComputedStyle(e).lineHeight, getComputedStyle(e).fontSize].map(parseFloat)")
    assert line >= 1.4 * size
    assert _saved(notebook) == before
