"""Issue 6, acceptance 5-7, in real JupyterLab 4 (and Notebook 7 for the re-run) with a kernel.

5. The providers' cell is scrolled far away in a WINDOWED notebook (the setting the other
   browser tests turn off): the drag's edit still lands, by cell id, and only in the literal.
6. Running the edited cell again re-profiles at the new batch size: the widget's progress line
   shows, then clears, and the header and the batch size follow. A syntax error typed into that
   cell and run shows in the widget (its last good profile stays), and the kernel stays usable.
7. Bad inputs show a readable error and the kernel goes on: no providers (an error widget plus
   IPython's one-line UsageError), a provider that raises (the widget's error box), a
   `%%skyline` cell that does not parse (the cell itself errors: IPython's SyntaxError with its
   caret, then one UsageError line saying nothing was profiled; no widget), and `batch_size=2**5`
   (it profiles, but a drag is refused with the reason and a `batch_size = N` line to copy);
   `batch_size=1_000` is dragged in its own spelling.

Time: about 2 minutes on a busy 2-core machine (three kernels, four profiles).
"""

from __future__ import annotations

import re
import time

import nbformat
import pytest
from conftest import ARTIFACTS, user_settings
from playwright.sync_api import expect
from test_cell_edit import (
    BUDGET,
    HEADER,
    MODEL,
    PROVIDERS,
    SETUP,
    _drag,
    _edit_status,
    _edited,
    _editor,
    _open,
    _part,
    _ready,
    _saved,
    _type_in,
    _with_literal,
)  # fmt: skip

pytestmark = [pytest.mark.browser, pytest.mark.timeout(150)]

TRACKER = "@jupyterlab/notebook-extension/tracker"
KERNEL_OK = "print('kernel ok', 6 * 7)"
FILLER = "## Notes {i}\n\n" + "A paragraph that only takes room on the page.\n\n" * 8


def _cell(notebook, index: int):
    return notebook.page.locator(".jp-Notebook .jp-Cell").nth(index)


def _widget_in(cell):
    return cell.locator('.jp-OutputArea [data-skyline="root"]')


def _watch_progress(status) -> None:
    """Record, in the page, whether the widget's progress line ever shows "Profiling…"."""
    status.evaluate(
        """el => {
            window.__skProgressSeen = false;
            const seen = () => {
                if (!el.hidden && el.textContent.includes("Profiling one training iteration"))
                    window.__skProgressSeen = true;
            };
            new MutationObserver(seen).observe(
                el, {attributes: true, childList: true, subtree: true, characterData: true});
        }"""
    )


def _run_cell(notebook, index: int, cell=None) -> None:
    """Select cell `index` and run it in place (Ctrl+Enter); wait for its new count, then idle."""
    cell = cell or _cell(notebook, index)
    prompt = cell.locator(".jp-InputPrompt")
    before = prompt.inner_text()
    if cell.locator(".cm-editor.cm-focused").count() == 0:
        prompt.click()
    notebook.page.keyboard.press("Control+Enter")
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        now = prompt.inner_text()
        if now != before and re.search(r"\[\d+\]", now):
            notebook.wait_for_kernel_idle(60)
            return
        time.sleep(0.1)
    raise AssertionError(f"cell {index} did not finish running: prompt {prompt.inner_text()!r}")


def _shot(notebook, locator, name: str) -> None:
    """Keep a picture of an error state in test-artifacts/ (to check that it reads well)."""
    ARTIFACTS.mkdir(exist_ok=True)
    locator.scroll_into_view_if_needed()
    locator.screenshot(path=ARTIFACTS / f"cell-edit-more-{name}-{notebook.frontend}.png")


# The drags go down the memory bar: the memory line is fitted from allocations, which noise
# does not bend, while a noisy time line can turn the throughput bar's direction around.
# ---- 5. windowed notebook ---------------------------------------------------------------------
@pytest.mark.parametrize("frontend", ["lab"])
@pytest.mark.parametrize("windowing", ["full", "contentVisibility"])  # the latter is the default
def test_edit_lands_in_a_cell_scrolled_far_away_in_a_windowed_notebook(notebook, windowing):
    code = {"setup": SETUP, "providers": PROVIDERS, "profile": f"%skyline {BUDGET}"}
    nb = nbformat.v4.new_notebook()
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    notes = {f"notes-{i}": FILLER.format(i=i) for i in range(30)}
    fillers = [nbformat.v4.new_markdown_cell(text, id=key) for key, text in notes.items()]
    nb.cells = [nbformat.v4.new_code_cell(code["setup"], id="setup"),
                nbformat.v4.new_code_cell(code["providers"], id="providers"),
                *fillers, nbformat.v4.new_code_cell(code["profile"], id="profile")]  # fmt: skip
    notebook.name = f"edit-windowed-{windowing}.ipynb"
    nbformat.write(nb, notebook.path)

    with user_settings(notebook.server, TRACKER, {"windowingMode": windowing}):
        notebook.open()
        notebook.run_all()
    page = notebook.page
    scroller = page.locator(".jp-Notebook.jp-WindowedPanel-outer, .jp-WindowedPanel-outer").first
    widget = page.locator('.jp-OutputArea [data-skyline="root"]')
    for _ in range(100):  # to the end, where the widget is (windowing renders as it scrolls)
        scroller.evaluate("el => { el.scrollTop = el.scrollHeight; }")
        if widget.count():
            break
        page.wait_for_timeout(100)
    _ready(widget, 32)

    def providers_box():  # where cell A's editor is now, or None when it is not in the DOM
        editors = page.locator(".jp-Cell .cm-content", has_text="def skyline_input_provider(")
        return editors.first.bounding_box() if editors.count() else None

    view = scroller.bounding_box()
    box = providers_box()
    if windowing == "full":
        assert box is None, "cell A is still attached: the notebook is not windowed"
    else:
        assert box is None or box["y"] + box["height"] < view["y"] - 5000, box

    down = _drag(notebook, widget, "memory", 3, lambda b: b < 32)
    _edited(widget, 32, down)
    if windowing == "full":
        assert providers_box() is None  # the edit did not need cell A on screen
    saved = notebook.save()
    sources = {cell["id"]: "".join(cell["source"]) for cell in saved["cells"]}
    assert sources == {**notes, **code, "providers": _with_literal(PROVIDERS, down)}


# ---- 6. re-running the edited cell ------------------------------------------------------------
def test_rerunning_the_edited_cell_reprofiles_then_a_syntax_error_shows(notebook):  # Lab + NB 7
    cells = {"setup": SETUP, "providers": PROVIDERS, "profile": f"%skyline {BUDGET}",
             "after": KERNEL_OK}  # fmt: skip
    notebook.write(f"edit-rerun-{notebook.frontend}.ipynb", cells)
    notebook.open()
    notebook.run_all()
    widget = _widget_in(_cell(notebook, 2))
    _ready(widget, 32)
    header_batch = _part(widget, "summary").filter(has_text="Batch size")
    expect(header_batch).to_have_text(re.compile(r"Batch size:?\s*32$"))

    down = _drag(notebook, widget, "memory", 3, lambda b: b < 32)
    _edited(widget, 32, down)

    # Run the edited cell: the widget below re-profiles at the literal now in it.
    status = _part(widget, "status")
    _watch_progress(status)
    _run_cell_async(notebook, 1)
    # a small profile can come and go between two polls: the page itself records it
    notebook.page.wait_for_function("window.__skProgressSeen === true", timeout=20_000)
    expect(status).to_be_hidden(timeout=90_000)
    notebook.wait_for_kernel_idle(60)
    expect(header_batch).to_have_text(re.compile(rf"Batch size:?\s*{down}$"))
    expect(_part(widget, "predicted-batch-size")).to_have_text(str(down))
    expect(widget.locator(".sk-batch-tag")).to_have_text(" (measured)")
    expect(_part(widget, "error")).to_be_hidden()
    assert _saved(notebook)["providers"] == _with_literal(PROVIDERS, down)

    # A syntax error typed into the cell and run: the cell shows IPython's SyntaxError, the
    # widget says its source did not run (and keeps the last good profile), the kernel goes on.
    _type_in(notebook, cells, "providers", "end", "\ndef broken(:\n    pass\n")
    _run_cell(notebook, 1)
    assert "SyntaxError" in _cell(notebook, 1).locator(".jp-OutputArea").inner_text()
    error = _part(widget, "error")
    expect(error).to_be_visible()
    expect(error).to_contain_text(re.compile(
        r"The source cell did not run \(SyntaxError: .+, line \d+\); the profile below is from "
        r"its last successful run\."))  # fmt: skip
    expect(header_batch).to_have_text(re.compile(rf"Batch size:?\s*{down}$"))
    _shot(notebook, _cell(notebook, 2), "syntax-error-in-source")
    _run_cell(notebook, 3)
    expect(_cell(notebook, 3).locator(".jp-OutputArea")).to_contain_text("kernel ok 42")


@pytest.mark.parametrize("frontend", ["lab"])
def test_a_drag_undone_in_the_cell_stays_undone_when_the_cell_magic_runs_again(notebook):
    """A drag wrote the literal into a `%%skyline` cell, Ctrl+Z there undid it, and the cell
    ran again: it profiles the cell as it reads. (The kernel once wrote the dragged value back
    in, as it does for a drag no front-end path could write, and profiled that.)"""
    cells = {"setup": SETUP, "providers": f"%%skyline {BUDGET}\n" + PROVIDERS}
    widget = _open(notebook, "edit-undo-rerun", cells)
    up = _drag(notebook, widget, "memory", -4, lambda b: b > 32)
    _edited(widget, 32, up)
    _editor(notebook, cells, "providers").click()
    notebook.page.keyboard.press("Control+z")
    assert _saved(notebook) == cells
    _run_cell(notebook, 1)
    _ready(_widget_in(_cell(notebook, 1)), 32)
    assert _saved(notebook) == cells


@pytest.mark.parametrize("frontend", ["lab"])
def test_a_literal_grouped_by_underscores_is_dragged_in_its_own_spelling(notebook):
    """`batch_size=1_000` profiles, and a drag writes the new size grouped the same way
    (`1_500`), the only change in the saved notebook."""
    grouped = PROVIDERS.replace("(batch_size=32)", "(batch_size=1_000)")
    cells = {"setup": SETUP, "providers": "%%skyline --memory-budget 256MiB\n" + grouped}
    notebook.write(f"edit-grouped-{notebook.frontend}.ipynb", cells)
    notebook.open()
    notebook.run_all()
    widget = notebook.page.locator('.jp-OutputArea [data-skyline="root"]')
    _ready(widget, 1000)
    up = _drag(notebook, widget, "memory", -4, lambda b: b > 1000)
    _edit_status(widget, rf"Set the batch size to {up:_} in the source cell \(was 1_000\)", "event")
    want = {**cells, "providers": cells["providers"].replace("1_000", f"{up:_}")}
    assert _saved(notebook) == want


def _run_cell_async(notebook, index: int) -> None:
    """Start running cell `index` (Ctrl+Enter) without waiting for it to finish."""
    _cell(notebook, index).locator(".jp-InputPrompt").click()
    notebook.page.keyboard.press("Control+Enter")


# ---- 7. bad inputs ----------------------------------------------------------------------------
RAISING_MODEL = MODEL.replace(
    "    return nn.Sequential(",
    "    raise FileNotFoundError('no checkpoint at ./mlp.pt')\n    nn.Sequential(",
)
BAD_CELLS = {
    "setup": SETUP,
    "nothing": f"%skyline {BUDGET}",
    "unparsable": f"%%skyline {BUDGET}\n" + PROVIDERS.replace("(batch_size=32)", "(batch_size=32"),
    "raising": f"%%skyline {BUDGET}\n" + HEADER + RAISING_MODEL + PROVIDERS[len(HEADER + MODEL):],
    "power": f"%%skyline {BUDGET}\n" + PROVIDERS.replace("batch_size=32", "batch_size=2**5"),
    "after": KERNEL_OK,
}


@pytest.mark.parametrize("frontend", ["lab"])
def test_bad_inputs_show_readable_errors_and_the_kernel_goes_on(notebook):
    notebook.write("edit-bad-inputs.ipynb", BAD_CELLS)
    notebook.open()
    order = list(BAD_CELLS)
    cell = {name: _cell(notebook, order.index(name)) for name in order}
    for name in ("setup", "nothing", "unparsable", "raising"):
        _run_cell(notebook, order.index(name))

    # No providers: the cell fails with one UsageError naming every missing provider, once,
    # and how to name others; no widget.
    out = cell["nothing"].locator(".jp-OutputArea")
    expect(out).to_contain_text(re.compile(
        r"UsageError: the notebook does not define skyline_model_provider or "
        r"deepview_model_provider, skyline_input_provider or deepview_input_provider, "
        r"skyline_iteration_provider or deepview_iteration_provider; define each, or name "
        r"yours with -m, -i, -t NAME"))  # fmt: skip
    assert out.inner_text().count("does not define") == 1
    assert out.locator('[data-skyline="root"]').count() == 0
    _shot(notebook, cell["nothing"], "no-providers")

    # A %%skyline cell that does not parse errors by itself: IPython's SyntaxError, then one
    # line saying nothing was profiled, and no widget.
    out = cell["unparsable"].locator(".jp-OutputArea")
    expect(out).to_contain_text("SyntaxError")
    expect(out).to_contain_text("UsageError: %%skyline: the cell's code failed (see above); "
                                "nothing was profiled")  # fmt: skip
    assert out.locator('[data-skyline="root"]').count() == 0
    _shot(notebook, cell["unparsable"], "unparsable-cell")

    # A provider that raises: the widget's error box names the provider, where it is and what
    # it raised, in one line (any traceback is folded under it).
    error = _part(_widget_in(cell["raising"]), "error")
    expect(error.locator(".sk-error-message")).to_have_text(re.compile(
        r"^the model provider raised FileNotFoundError: no checkpoint at \./mlp\.pt"))  # fmt: skip
    _shot(notebook, cell["raising"], "provider-raises")

    # batch_size=2**5: it profiles (at 32), but the drag cannot edit and says why.
    _run_cell(notebook, order.index("power"))
    widget = _widget_in(cell["power"])
    _ready(widget, 32)
    before = _saved(notebook)
    down = _drag(notebook, widget, "memory", 3, lambda b: b < 32)
    message = _edit_status(widget, r"The batch size cannot be edited here: the default of "
                           r"`batch_size` in `skyline_input_provider` is `2 \*\* 5`, not a "
                           r"literal such as `32`\. Set it by hand:", "manual")  # fmt: skip
    assert message
    expect(_part(widget, "edit-status")).to_have_class(re.compile(r"\bsk-edit-refused\b"))
    expect(_part(widget, "copy-text")).to_have_value(f"batch_size = {down}")
    _shot(notebook, _part(widget, "edit-status"), "not-a-literal")
    assert _saved(notebook) == before

    _run_cell(notebook, order.index("after"))
    expect(cell["after"].locator(".jp-OutputArea")).to_contain_text("kernel ok 42")
