"""Whose ``def`` holds the batch-size literal (``inputs.def_name``), and the notebook variable
an input provider without a ``batch_size`` default reads (``inputs.batch_variable``)."""

from __future__ import annotations

import functools

import pytest

from skyline_nb.entry import UsageError
from skyline_nb.inputs import batch_variable, def_name


def make_batch(batch_size=16, seq_len=64):
    return batch_size, seq_len


def cached(fn):
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        return fn(*args, **kwargs)
    return wrapper


@pytest.mark.parametrize(("provider", "name"), [
    (make_batch, "make_batch"),
    (cached(make_batch), "make_batch"),  # a decorator that says what it wraps
    (functools.partial(make_batch, seq_len=128), "make_batch"),  # binds no batch size
    (functools.partial(make_batch, batch_size=32), None),  # its 32 is what the user runs
    (functools.partial(make_batch, 32), None),  # so is a positional one
    (lambda batch_size=16: batch_size, None),  # no def: the default names
    (print, None),  # no Python code at all
])
def test_the_def_that_holds_the_literal(provider, name) -> None:
    assert def_name(provider) == name


def test_the_notebook_variable_a_provider_reads_or_is_passed() -> None:
    namespace = {"batch_size": 24, "BATCH_SIZE": 8, "SEQ": 128, "flag": True}

    def reads_it():
        return batch_size  # noqa: F821 - the notebook's global

    def passed(batch_size):
        return batch_size

    def reads_others():
        return SEQ, BATCH_SIZE, flag  # noqa: F821 - the notebook's globals

    assert batch_variable(reads_it, namespace) == "batch_size"
    assert batch_variable(passed, namespace) == "batch_size"
    assert batch_variable(make_batch, namespace) is None  # its own default decides
    assert batch_variable(passed, {"batch_size": True}) is None  # a bool is no batch size
    with pytest.raises(UsageError, match=r"reads SEQ = 128, BATCH_SIZE = 8 from the notebook: "
                                         r"`%skyline --batch-size-var BATCH_SIZE`"):
        batch_variable(reads_others, namespace)
