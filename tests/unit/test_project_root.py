"""Which files are the user's when ``profile`` is given no ``project_root``: the folder of the
file defining the providers, also when the model provider is a class (which has no code of its
own to locate) and the profile runs from another working folder."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from skyline_nb.profiler.session import profile
from skyline_nb.profiler.stacks import default_project_root

MODULE = '''
import torch
from torch import nn


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 4)

    def forward(self, x):
        return self.fc(x)


def inputs(batch_size=4):
    return (torch.randn(batch_size, 8),)


def iteration_of(model):
    opt = torch.optim.SGD(model.parameters(), lr=0.1)

    def step(x):
        opt.zero_grad()
        model(x).sum().backward()
        opt.step()

    return step
'''


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    folder = tmp_path / "project"
    folder.mkdir()
    (folder / "user_net.py").write_text(MODULE)
    spec = importlib.util.spec_from_file_location("user_net_for_root", folder / "user_net.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    return folder, module


def test_a_class_as_model_provider_takes_the_folder_of_the_next_provider(project):
    folder, module = project
    assert default_project_root(module.Net, module.inputs, module.iteration_of) == \
        folder.resolve()
    assert default_project_root(module.Net) == Path.cwd().resolve()


def test_a_class_model_provider_keeps_the_lines_of_its_file(project):
    _, module = project
    report = profile(module.Net, module.inputs, module.iteration_of, predict=False)
    assert [source.file for source in report.sources] == ["user_net.py"]
    lines = {frame.line for node in report.tree.walk() for frame in node.frames}
    code = report.sources[0].code.splitlines()
    assert any("self.fc(x)" in code[line - 1] for line in lines)
