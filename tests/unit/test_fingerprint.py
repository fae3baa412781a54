"""``fingerprint.made``: equal records exactly when nothing the providers reach has changed."""

from __future__ import annotations

import types

import torch

from skyline_nb import fingerprint


def _module(source: str) -> dict:
    """A namespace where ``source`` ran, its functions counting as user code (this file)."""
    namespace: dict = {"__name__": "__main__"}
    exec(compile(source, __file__, "exec"), namespace)
    return namespace


SOURCE = '''
import torch

SCALE = 2
device = torch.device("cpu")


class Net(torch.nn.Module):
    def forward(self, x):
        return helper(x)


def helper(x):
    return x * SCALE


def model_provider():
    return Net().to(device)


def input_provider(batch_size=8):
    return (torch.randn(batch_size, 4),)
'''


def _made(ns: dict, *options) -> fingerprint.Made:
    return fingerprint.made((ns["model_provider"], ns["input_provider"]), *options)


def test_unchanged_providers_make_equal_records():
    ns = _module(SOURCE)
    assert _made(ns, 8) == _made(ns, 8)
    ns["SCALE"] = 2  # rebound to an equal value
    ns["unrelated"] = [1, 2]
    assert _made(ns, 8) == _made(ns, 8)


def test_any_change_in_reach_or_options_makes_records_differ():
    ns = _module(SOURCE)
    before = _made(ns, 8)
    assert before != _made(ns, 16)
    for name, value in [("SCALE", 3), ("device", torch.device("meta"))]:
        ns2 = _module(SOURCE)
        reference = _made(ns2, 8)
        ns2[name] = value
        assert reference != _made(ns2, 8), name
    ns3 = _module(SOURCE)
    reference = _made(ns3, 8)
    exec(compile("def helper(x):\n    return x\n", __file__, "exec"), ns3)
    assert reference != _made(ns3, 8)  # a helper the model's class calls, redefined
    ns4 = _module(SOURCE)
    reference = _made(ns4, 8)
    ns4["input_provider"].__defaults__ = (4,)
    assert reference != _made(ns4, 8)
    assert _made(_module(SOURCE), 8) != _made(_module(SOURCE), 8)  # the cell ran again


def test_an_unhashable_global_cannot_be_compared():
    ns = _module(SOURCE.replace("SCALE = 2", "SCALE = [2]").replace("x * SCALE", "x * SCALE[0]"))
    record = _made(ns, 8)
    assert record.reach is None and record != _made(ns, 8)


def test_recursive_code_and_library_objects():
    ns = _module("def f(n):\n    return f(n - 1) if n else types\n")
    ns["types"] = types
    assert fingerprint.made((ns["f"],)) == fingerprint.made((ns["f"],))
