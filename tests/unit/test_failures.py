"""A failed profile as the user reads it: the banner names what raised where, the traceback shows
the user's frames only, and ``%tb`` (any later rendering) the whole chain."""

from __future__ import annotations

import inspect

import pytest
import torch
from torch import nn

from skyline_nb import failures
from skyline_nb.profiler.session import profile

HERE = "tests/unit/test_failures.py"


def model_provider():
    return nn.Linear(4, 2)


def input_provider(batch_size=2):
    return (torch.randn(batch_size, 4),)


def raising_iteration_provider(model):
    def iteration(x):
        model(x).sum().backward()
        raise ValueError("bad step")  # the line the banner names

    return iteration


def mismatched_iteration_provider(model):
    def iteration(x):
        model(torch.cat([x, x], dim=1))  # torch raises, deep in nn.Linear

    return iteration


def raising_model_provider():
    raise RuntimeError("no model today")


RAISE_LINE = inspect.getsourcelines(raising_iteration_provider)[1] + 3
MODEL_RAISE_LINE = inspect.getsourcelines(raising_model_provider)[1] + 1
MISMATCH_LINE = inspect.getsourcelines(mismatched_iteration_provider)[1] + 2


def _failed(*providers):
    run = failures.for_user(profile)
    with pytest.raises(failures.ProfileFailed) as info:
        run(*providers, device="cpu", predict=False)
    return info.value


def test_the_banner_names_the_part_that_raised_and_the_line_it_raised_on():
    failed = _failed(model_provider, input_provider, raising_iteration_provider)
    assert str(failed) == (f"the iteration raised ValueError: bad step\n"
                           f"  at {HERE}, line {RAISE_LINE}")
    assert isinstance(failed.user_exception, ValueError)
    failed = _failed(raising_model_provider, input_provider, raising_iteration_provider)
    assert str(failed) == (f"the model provider raised RuntimeError: no model today\n"
                           f"  at {HERE}, line {MODEL_RAISE_LINE}")


def test_an_error_raised_inside_torch_is_placed_on_the_users_line():
    failed = _failed(model_provider, input_provider, mismatched_iteration_provider)
    assert str(failed).startswith("the iteration raised RuntimeError: mat1 and mat2 shapes")
    assert str(failed).endswith(f"\n  at {HERE}, line {MISMATCH_LINE}")


def test_the_traceback_keeps_the_users_frames_only():
    failed = _failed(model_provider, input_provider, raising_iteration_provider)
    tb = failures.user_traceback(failed.user_exception)
    files = []
    while tb is not None:
        files.append(tb.tb_frame.f_code.co_filename)
        tb = tb.tb_next
    assert files and all(f.endswith("test_failures.py") for f in files)
    assert failures.user_traceback(failed.__cause__) is None  # the profiler's ProviderError


def test_first_rendering_is_short_and_later_ones_are_whole():
    failed = _failed(model_provider, input_provider, raising_iteration_provider)
    short = "".join(failed._render_traceback_())
    assert "bad step" in short and failures.HIDDEN_NOTE in short
    assert "skyline_nb/profiler" not in short and "ProviderError" not in short
    full = "".join(failed._render_traceback_())
    assert "skyline_nb/profiler" in full and "ProviderError" in full


def test_a_refusal_without_user_frames_keeps_the_profilers_words():
    failed = _failed(lambda: 3, input_provider, raising_iteration_provider)
    assert "returned int; it must return a torch.nn.Module" in str(failed)
    assert failed.user_exception is None
    assert failures.HIDDEN_NOTE in failed._render_traceback_()


def test_an_interrupt_stays_a_keyboard_interrupt():
    def interrupted(*_args, **_kwargs):
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt) as info:
        failures.for_user(interrupted)(model_provider, input_provider, raising_iteration_provider)
    assert isinstance(info.value, failures.ProfileInterrupted)
    assert str(info.value) == "profiling was interrupted"
