"""Frames in notebook cells carry the cell id and the line as the user sees it.

Uses a real IPython shell: the ``pre_run_cell`` hook must compute the same code name IPython
compiles the cell under, and lines must stay right with leading blank lines and with a
``%%skyline``-style body registered with ``first_line=2``.
"""

from __future__ import annotations

import pytest
import torch
from IPython.core.interactiveshell import InteractiveShell

from skyline_nb import cells
from skyline_nb.profiler.session import profile

CELL = '''

import torch
from torch import nn

class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return torch.tanh(self.fc(x))

def skyline_model_provider():
    return Net()

def skyline_input_provider(batch_size=4):
    return (torch.randn(batch_size, 8),)

def skyline_iteration_provider(model):
    def iteration(x):
        model(x).sum().backward()
    return iteration
'''


@pytest.fixture(scope="module")
def shell():
    ip = InteractiveShell.instance()
    hook = cells.make_pre_run_cell_hook(ip)
    ip.events.register("pre_run_cell", hook)
    yield ip
    ip.events.unregister("pre_run_cell", hook)


def cell_line(text: str, needle: str) -> int:
    return next(i + 1 for i, line in enumerate(text.splitlines()) if needle in line)


def test_registry_maps_code_lines_to_cell_lines():
    entry = cells.register("<cell-test>", "c1", "x = 1\ny = 2\n", first_line=2,
                           cell_source="%%skyline\nx = 1\ny = 2\n")
    assert cells.lookup("<cell-test>") is entry
    assert entry.cell_line(1) == 2 and entry.cell_line(2) == 3
    assert entry.display_source().splitlines()[entry.cell_line(2) - 1] == "y = 2"
    assert cells.lookup("<nothing>") is None
    assert cells.leading_blank_lines("\n  \nx\n\n") == 2
    with pytest.raises(ValueError):
        cells.register("<bad>", None, "", first_line=0)


def test_pre_run_cell_hook_registers_cells_with_leading_blank_lines(shell):
    result = shell.run_cell(CELL, cell_id="cell-abc")
    assert result.success
    provider = shell.user_ns["skyline_model_provider"]
    entry = cells.lookup(provider.__code__.co_filename)
    assert entry is not None and entry.cell_id == "cell-abc"
    line = entry.cell_line(provider.__code__.co_firstlineno)
    assert line == cell_line(CELL, "def skyline_model_provider")
    assert entry.display_source() == CELL


def test_profile_frames_point_into_the_cell(shell):
    shell.run_cell(CELL, cell_id="cell-xyz")
    ns = shell.user_ns
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        report = profile(ns["skyline_model_provider"], ns["skyline_input_provider"],
                         ns["skyline_iteration_provider"], device="cpu", predict=False,
                         cells=cells.lookup)
    finally:
        torch.set_num_threads(threads)
    tanh = next(n for n in report.tree.walk() if n.name == "tanh")
    frame = tanh.frames[0]
    assert frame.cell_id == "cell-xyz"
    assert frame.line == cell_line(CELL, "return torch.tanh(self.fc(x))")
    addmm = report.tree.find("fc/addmm#0")
    assert addmm.frames[0].line == frame.line
    weight = next(w for w in report.weights if w.name == "fc.weight")
    assert weight.frames[0].line == cell_line(CELL, "self.fc = nn.Linear(8, 4)")
    assert [(s.file, s.cell_id) for s in report.sources] == [(frame.file, "cell-xyz")]
    assert report.sources[0].code == CELL


def test_cell_magic_body_lines_are_shifted_by_one():
    body = "def f():\n    return g()\n\ndef g():\n    raise RuntimeError\n"
    name = "/tmp/ipykernel_test/magic_body.py"
    cells.register(name, "m1", body, first_line=2, cell_source="%%skyline\n" + body)
    namespace: dict = {}
    exec(compile(body, name, "exec"), namespace)
    from skyline_nb.profiler.stacks import UserCode

    user = UserCode(None, cells.lookup)
    try:
        namespace["f"]()
    except RuntimeError as exc:
        tb = exc.__traceback__
        while tb.tb_next is not None:
            tb = tb.tb_next
        frames = user.capture(tb.tb_frame)
    assert [(f.cell_id, f.line) for f in frames] == [("m1", 6), ("m1", 3)]
