"""Progress, Cancel and kernel liveness in real JupyterLab 4 and Notebook 7 (issue 17).

A model whose forward sleeps 0.3 s makes a profile take long enough to watch: the widget shows
the stage, the time elapsed and a bar that advances while the kernel is busy running the cell
(the kernel's trait updates reach the page as they are made). Cancel interrupts the kernel
through the notebook; afterwards the widget says "Cancelled", the kernel runs the next cell,
and the user's state (a variable, torch's global RNG state) is as it was. After a kernel
restart, Re-profile and "Measure at N" are disabled and say why.

Time: a kernel start and torch import, then about 5 s of profiling before Cancel, or one quick
profile of a small MLP before the restart: about 20-40 s a test on a busy 2-core machine.
"""

from __future__ import annotations

import re
import time

import pytest
from conftest import ARTIFACTS
from notebook_cells import mlp_cell
from playwright.sync_api import Error as PlaywrightError
from playwright.sync_api import expect
from test_cell_edit import _part
from test_cell_edit_more import _cell, _run_cell, _run_cell_async, _widget_in

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

SLOW_MODEL = '''import hashlib
import time

import torch
from torch import nn

torch.set_num_threads(1)
marker = 41


class Slow(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 2)

    def forward(self, x):
        time.sleep(0.3)
        return self.fc(x)


def skyline_model_provider():
    return Slow()


def skyline_input_provider(batch_size=4):
    return torch.randn(batch_size, 8), torch.randint(0, 2, (batch_size,))


def skyline_iteration_provider(model):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def iteration(x, y):
        opt.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        opt.step()

    return iteration


def rng_hash():
    return hashlib.sha1(torch.random.get_rng_state().numpy().tobytes()).hexdigest()[:10]


before = rng_hash()'''
# The animations and transitions running in the page on elements inside `root`.
ANIMATING = """root => document.getAnimations()
    .filter(a => a.effect && root.contains(a.effect.target))
    .map(a => `${a.effect.target.className}: ${a.animationName || a.transitionProperty}`)"""
CHECK = "print('after', marker, rng_hash() == before, rng_hash())"


def _shot(notebook, locator, name: str) -> None:
    """Keep a picture in test-artifacts/, to check that it reads well. A clip of the page: the
    progress never stands still long enough for an element screenshot. When a run ends the
    kernel sends the widget's display again (``LiveProfile._refresh_outputs``) and the output
    area draws a new view: an element can leave the page mid-scroll, and the locator then
    finds the new one."""
    ARTIFACTS.mkdir(exist_ok=True)
    path = ARTIFACTS / f"progress-{name}-{notebook.frontend}.png"
    for attempt in range(3):
        try:
            locator.scroll_into_view_if_needed()
            box = locator.bounding_box()
            break
        except PlaywrightError:
            if attempt == 2:
                raise
            time.sleep(0.5)
    notebook.page.screenshot(path=path, clip=box, animations="disabled")


def _advance(widget, timeout_s: float = 60) -> tuple[set[str], list[int]]:
    """Watch the progress until the bar advanced and the stage changed, while the cell runs;
    return the stages and bar values seen."""
    stage, bar = _part(widget, "progress-stage"), _part(widget, "progress")
    stages: set[str] = set()
    values: list[int] = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        stages.add(stage.inner_text())
        value = bar.get_attribute("aria-valuenow")
        if value is not None:
            values.append(int(value))
        if len(stages - {""}) >= 2 and values and values[-1] > values[0]:
            return stages, values
        time.sleep(0.2)
    raise AssertionError(f"the progress did not advance: stages {stages}, bar {values}")


def test_progress_advances_and_cancel_leaves_the_kernel_as_it_was(notebook):  # Lab + NB 7
    cells = {"setup": "%load_ext skyline_nb", "model": SLOW_MODEL,
             "profile": "%skyline --device cpu", "check": CHECK}  # fmt: skip
    notebook.write(f"progress-{notebook.frontend}.ipynb", cells)
    notebook.open()
    _run_cell(notebook, 0)
    _run_cell(notebook, 1)
    widget = _widget_in(_cell(notebook, 2))
    _run_cell_async(notebook, 2)

    status = _part(widget, "status")
    expect(status).to_be_visible(timeout=30_000)
    expect(status).to_contain_text("Profiling one training iteration")
    stages, values = _advance(widget)
    assert values == sorted(values), values  # the bar never moves back
    assert any(s.startswith(("Building the model", "Peak memory", "Timing")) for s in stages)
    expect(_part(widget, "progress-clock")).to_contain_text(re.compile(r"\d+ s elapsed"))
    _shot(notebook, status, "progress")
    # Nothing of the widget redraws between the once-a-second updates: a browser on the kernel's
    # cores would take that CPU from the iterations being timed (progress.js).
    assert widget.evaluate(ANIMATING) == []

    cancel = _part(widget, "cancel")
    expect(cancel).to_be_visible()
    cancel.click()
    cancelled = _part(widget, "cancelled")
    expect(cancelled).to_be_visible(timeout=15_000)
    expect(cancelled).to_contain_text(re.compile(r"^Cancelled after \d+ s"))
    expect(status).to_be_hidden()
    expect(_part(widget, "error")).to_be_hidden()
    expect(_part(widget, "summary")).to_have_text("No profile yet.")
    _shot(notebook, cancelled, "cancelled")

    # The kernel runs the next cell, with the user's variable and torch's RNG state unchanged.
    expect(_cell(notebook, 2).locator(".jp-InputPrompt")).to_have_text(re.compile(r"\[\d+\]"))
    expect(_cell(notebook, 2).locator(".jp-OutputArea")).to_contain_text("nterrupt")
    notebook.wait_for_kernel_idle(30)
    _run_cell(notebook, 3)
    expect(_cell(notebook, 3).locator(".jp-OutputArea")).to_contain_text(
        re.compile(r"after 41 True \w{10}"))


def test_cancelling_a_reprofile_started_in_the_widget(notebook):  # Lab + NB 7
    """The widget's messages reach the kernel on a subshell thread (JupyterLab 4.6 and ipykernel
    7), where no interrupt lands: the re-profile must still stop on Cancel (it runs on the main
    thread) and leave the profile shown, the kernel and the user's state as they were."""
    cells = {"setup": "%load_ext skyline_nb", "model": SLOW_MODEL,
             "profile": "%skyline --device cpu --no-predict", "check": CHECK}  # fmt: skip
    notebook.write(f"progress-reprofile-{notebook.frontend}.ipynb", cells)
    notebook.open()
    notebook.run_all()
    widget = _widget_in(_cell(notebook, 2))
    batch = _part(widget, "summary").filter(has_text="Batch size")
    expect(batch).to_have_text(re.compile(r"Batch size:?\s*4$"))
    reprofile = _part(widget, "reprofile")
    expect(reprofile).to_be_enabled()

    reprofile.click()
    status = _part(widget, "status")
    expect(status).to_be_visible(timeout=15_000)
    expect(reprofile).to_be_disabled()
    expect(_part(widget, "progress-stage")).not_to_have_text("", timeout=15_000)
    _part(widget, "cancel").click()
    expect(_part(widget, "cancelled")).to_be_visible(timeout=15_000)
    expect(status).to_be_hidden()
    expect(batch).to_have_text(re.compile(r"Batch size:?\s*4$"))  # the profile shown stays
    expect(reprofile).to_be_enabled()
    _run_cell(notebook, 3)
    expect(_cell(notebook, 3).locator(".jp-OutputArea")).to_contain_text(
        re.compile(r"after 41 True \w{10}"))


def test_after_a_restart_reprofile_and_measure_are_off_and_say_why(notebook):  # Lab + NB 7
    cells = {"setup": "%load_ext skyline_nb",
             "profile": "%%skyline --device cpu --no-predict\n" + mlp_cell(32, 64, 8, 16)}
    notebook.write(f"restart-{notebook.frontend}.ipynb", cells)
    notebook.open()
    notebook.run_all()
    widget = _widget_in(_cell(notebook, 1))
    reprofile, measure = _part(widget, "reprofile"), _part(widget, "measure")
    expect(reprofile).to_be_enabled()
    expect(measure).to_be_enabled()
    expect(_part(widget, "kernel-reason")).to_be_hidden()
    # Measured at the batch shown, with what tells its time from the machine's noise
    expect(measure).to_have_text("Measure at 16")
    measure.click()
    expect(_part(widget, "measurement")).to_contain_text(re.compile(
        r"Measured at 16: .+ samples/s, peak .+(the middle half of its \d+ timed steps lay within "
        r".+% of each other"
        r"|the machine was busy)"), timeout=30_000)

    page = notebook.page
    page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Kernel$")).click()
    page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Restart Kernel")).first.click()
    page.locator(".jp-Dialog .jp-mod-accept").click()

    reason = _part(widget, "kernel-reason")
    expect(reason).to_be_visible()
    expect(reason).to_have_text(
        "The kernel restarted: run the profiling cell again to re-profile or measure.")
    expect(reprofile).to_be_disabled()
    expect(measure).to_be_disabled()
    expect(reprofile).to_have_attribute("title", reason.inner_text())
    notebook.wait_for_kernel_idle(30)
    reprofile.hover()  # asked again: still nobody serves this widget
    page.wait_for_timeout(2500)
    expect(reprofile).to_be_disabled()
    _shot(notebook, widget.locator(".sk-actions"), "kernel-restarted")
