"""The newcomer's notebook (issue 12): providers first, `%load_ext skyline_nb` + `%skyline` in a
later cell, default torch threads, in real JupyterLab 4 and Notebook 7.

The providers' cell ran before the extension was loaded, so the kernel knows it only from
IPython's history, by its text, not by its cell id: the widget finds it by an exact, unique match
of that text among the notebook's cells. A real pointer drag of the THROUGHPUT bar upward, that
leaves the bar sideways before the release, must rewrite the batch-size literal and nothing else
(read back from the .ipynb on disk after Ctrl+S), to the batch size the widget shows, within the
drag's bound (8× the largest measured batch size). Two identical provider cells make the match
ambiguous: the edit is refused with that reason, and the notebook is left as it was.

Nothing here sets torch's thread count: the numbers are the ones a user gets (a profile whose
samples were too scattered to trust is re-profiled, as a user would). The report's samples are
read from the kernel out of band (a silent request on the kernel's own connection), so the
notebook gets no extra cell.

Time: each test starts a kernel and profiles once (torch import plus a few seconds of sampling):
about 20-40 s a test on a busy 2-core machine.
"""

from __future__ import annotations

import ast
import json
import re
from typing import Any

import pytest
from conftest import ARTIFACTS
from jupyter_client import BlockingKernelClient
from notebook_cells import mlp_cell
from playwright.sync_api import expect
from test_cell_edit import _drag, _edit_status, _part, _press, _ready, _saved

pytestmark = [pytest.mark.browser, pytest.mark.timeout(240)]

MEASURED = 16
# A cell as typed (no final break): the issue's own MLP (256-512-10, SGD, 0.6-1 ms iterations
# at default threads). Beside chromium and the server on 2 cores its samples were too scattered
# to trust in 19 of 96 JupyterLab profiles while every stage drew a progress message, 4 of 72
# since (Notebook 7: 10 of 48; BENCHMARKS.md, session 28): a refusal is re-profiled (_ready).
PROVIDERS = mlp_cell(256, 512, 10, MEASURED).rstrip("\n")
PROFILE = "%load_ext skyline_nb\n%skyline"
DRAG_BOUND = 8  # the drag stays within 8x the largest measured batch size (issue 12)
# The report the widget shows now: the kernel side's latest profile, a Re-profile's included
# (``last_report()`` is the latest ``%skyline`` run's, which a Re-profile does not replace).
SHOWN = "__import__('IPython').get_ipython()._skyline_nb_magics.live[-1].report"
# What the kernel holds of it: enough to check the bound and to say, when a check fails, what
# the user would have seen.
REPORT_FACTS = (
    "(lambda r: {'samples': sorted({s.batch_size for s in r.samples} | {r.batch_size}),"
    " 'iteration_ms': r.iteration_ms, 'throughput': r.throughput,"
    " 'models': r.models and {'can_manipulate': r.models.can_manipulate,"
    f" 'reason': r.models.reason, 'max_throughput': r.models.max_throughput}},"
    f" 'warnings': r.warnings}})({SHOWN})"
)


def _with_literal(value: int) -> str:
    assert PROVIDERS.count(f"batch_size={MEASURED})") == 1
    return PROVIDERS.replace(f"batch_size={MEASURED})", f"batch_size={value})")


def _kernel_value(notebook, expression: str) -> Any:
    """``expression`` evaluated in the notebook's kernel, as a Python literal.

    Sent as a silent execute request with a user expression on the kernel's own connection
    file: no cell, no output and no history entry in the notebook under test.
    """
    sessions = [s for s in notebook.server.api("GET", "api/sessions") if s["path"] == notebook.name]
    assert len(sessions) == 1, sessions
    connection = notebook.server.runtime / f"kernel-{sessions[0]['kernel']['id']}.json"
    client = BlockingKernelClient(connection_file=str(connection))
    client.load_connection_file()
    # The shell channel alone: a heartbeat thread (HBChannel) once failed to open its socket in
    # CI ("Too many open files") and failed the test from its thread, with nothing to check here
    client.start_channels(iopub=False, stdin=False, hb=False, control=False)
    try:
        msg_id = client.execute("", silent=True, user_expressions={"value": expression})
        while True:
            reply = client.get_shell_msg(timeout=30)
            if reply["parent_header"].get("msg_id") == msg_id:
                break
    finally:
        client.stop_channels()
    value = reply["content"]["user_expressions"]["value"]
    assert value["status"] == "ok", value
    return ast.literal_eval(value["data"]["text/plain"])


def _profiled(notebook, name: str, cells: dict[str, str]) -> Any:
    """Write, open and run all; return the widget once its profile is shown."""
    notebook.write(f"{name}-{notebook.frontend}.ipynb", cells)
    notebook.open()
    notebook.run_all()
    widget = notebook.page.locator('.jp-OutputArea [data-skyline="root"]')
    expect(_part(widget, "predicted-batch-size")).to_have_text(str(MEASURED), timeout=90_000)
    assert "Traceback" not in notebook.output_text(), notebook.output_text()
    return widget


def _drag_up_and_off(notebook, widget, facts: dict[str, Any]) -> tuple[int, int]:
    """Press on the throughput bar, move up until the batch shown grows, move off the bar to
    the side, release there. Returns (batch shown just before the release, batch shown after)."""
    page = notebook.page
    if _part(widget, "throughput-bar").get_attribute("aria-disabled") == "true":
        pytest.fail(f"{_part(widget, 'drag-reason').inner_text()}; report: {facts}")
    x, y, box, shown = _press(notebook, widget, "throughput")
    seen = []
    for step in range(1, 41):  # 3 px a move, at most 120 px: past the top of the bar
        page.mouse.move(x, y - 3 * step)
        seen.append(int(shown.text_content()))
        if step >= 4 and seen[-1] > MEASURED:
            break
    off_x = box["x"] + box["width"] + 120  # sideways, off the bar, at the same height
    page.mouse.move(off_x, y - 3 * step, steps=5)
    before = int(shown.text_content())
    page.mouse.up()
    after = int(shown.text_content())
    assert before > MEASURED, f"dragging throughput up showed batch sizes {seen}; report: {facts}"
    return before, after


def _keep(notebook, stem: str, facts: dict[str, Any]) -> None:
    """Keep a picture of the widget after the edit and what the kernel profiled
    (test-artifacts/, for the reviewer: the numbers a user got at default threads)."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"{stem}-{notebook.frontend}"
    notebook.page.screenshot(path=path.with_suffix(".png"), full_page=True)
    path.with_suffix(".json").write_text(json.dumps(facts, indent=1))


def test_a_throughput_drag_edits_a_cell_that_ran_before_load_ext(notebook):  # Lab and NB 7
    cells = {"providers": PROVIDERS, "profile": PROFILE}
    widget = _profiled(notebook, "late-load", cells)
    # A kernel starved for seconds (chromium and the server on the same 2 cores) can give
    # samples too scattered to trust: the widget says so and offers Re-profile, which a user
    # would click; so does this test (_ready: up to 4 times). The first profile's numbers are
    # kept in the artifacts either way.
    first = _kernel_value(notebook, REPORT_FACTS)
    _ready(widget, MEASURED)
    facts = {**_kernel_value(notebook, REPORT_FACTS), "first_profile": first}

    before, after = _drag_up_and_off(notebook, widget, facts)
    assert after == before, f"showed {before} at the release, then {after}; report: {facts}"
    _edit_status(widget, rf"Set the batch size to {after} in the source cell \(was {MEASURED}\)",
                 "event")
    # beside "Measure at N" after the drag, Re-profile says it profiles the measured batch
    expect(_part(widget, "measure")).to_have_text(f"Measure at {after}")
    expect(_part(widget, "reprofile")).to_have_text(f"Re-profile at {MEASURED}")
    ARTIFACTS.mkdir(exist_ok=True)
    widget.locator(".sk-actions").screenshot(
        path=ARTIFACTS / f"late-load-actions-{notebook.frontend}.png")
    _keep(notebook, "late-load-drag", {**facts, "dragged_to": after})

    assert _saved(notebook) == {**cells, "providers": _with_literal(after)}
    largest = max(facts["samples"])
    assert MEASURED < after <= DRAG_BOUND * largest, (after, facts)
    # The id found by the cell's text reached the kernel (edit_target), which adopted it: running
    # that cell again now re-profiles this widget.
    assert _kernel_value(notebook, f"{SHOWN}.source.cell_id") == "providers"
    _measure_joins(notebook, widget, after, facts)


def _measure_joins(notebook, widget, after: int, facts: dict[str, Any]) -> None:
    """"Measure at N" after the drag: the measurement joins the samples (the view stays at N,
    the kernel's report holds it, the header's maximum follows) or says why it did not."""
    _part(widget, "measure").click()
    result = _part(widget, "measurement")
    expect(result).to_contain_text("to the samples", timeout=60_000)
    text = result.inner_text()
    assert text.startswith(f"Measured at {after}: ") and "predicted " in text, text
    samples = _kernel_value(notebook, f"sorted(s.batch_size for s in {SHOWN}.samples)")
    if "not added to the samples: " in text:  # its steps waited, or no curve took it
        assert after not in samples, (text, samples)
        return
    assert re.search(rf"added to the samples: (within the curve's tolerance: the curve stays as "
                     rf"it was|the time curve now goes through {after} too)", text), text
    assert after in samples and after not in facts["samples"], (samples, facts)
    expect(_part(widget, "predicted-batch-size")).to_have_text(str(after))
    assert _kernel_value(notebook, f"{SHOWN}.models.measured_range[1]") >= after


def test_two_identical_provider_cells_are_refused_as_ambiguous(notebook):  # Lab and NB 7
    cells = {"providers": PROVIDERS, "copy": PROVIDERS, "profile": PROFILE}
    widget = _profiled(notebook, "late-load-twice", cells)
    # The refusal must not depend on how well the time line fits: re-profile when the fit
    # turned dragging off (as the other edit tests do), then drag along the memory bar, whose
    # line is fitted from allocations, exact at any load.
    _ready(widget, MEASURED)
    up = _drag(notebook, widget, "memory", -4, lambda batch: batch > MEASURED)
    message = _edit_status(
        widget,
        r"^Not edited: 2 cells hold the code that defined the input provider, so which one to "
        r"edit is ambiguous\. Set it by hand:",
        "manual",
    )
    assert "Set it by hand" in message
    expect(_part(widget, "copy-text")).to_have_value(f"batch_size = {up}")
    _keep(notebook, "late-load-ambiguous", {"message": message})
    assert _saved(notebook) == cells
