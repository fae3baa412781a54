"""profile() leaves the user's session exactly as it found it, whether it returns or raises.

Checked after every outcome: the user's model and parameters, RNG states (torch CPU and CUDA,
Python, NumPy), grad and anomaly modes, threads, global torch flags, global module/optimizer
hooks, dispatch and function modes, saved-tensor hooks. test_interrupts.py interrupts a
profile at many more places. KeyboardInterrupt raised from inside the iteration (during level
1 and during the instrumented runs) must propagate unchanged.
"""

from __future__ import annotations

import copy
import random
import sys

import numpy
import pytest
import torch
from torch import nn

from skyline_nb.examples import cnn
from skyline_nb.profiler import torch_private as tp
from skyline_nb.profiler.errors import ProviderError
from skyline_nb.profiler.global_flags import global_flags
from skyline_nb.profiler.session import profile


def snapshot() -> dict:
    return {
        "torch_rng": torch.random.get_rng_state(),
        "python_rng": random.getstate(),
        "numpy_rng": numpy.random.get_state()[1].copy(),
        "grad": torch.is_grad_enabled(),
        "flags": {name: get() for name, (get, _set) in global_flags().items()},
        "default_device": tp.default_device_set(),
        "hooks": tp.global_hook_keys(),
        "modes": tp.mode_stack_depths(),
        "saved_tensors_hooks": tp.saved_tensors_hooks_top(),
        "threads": torch.get_num_threads(),
        "anomaly": (torch.is_anomaly_enabled(), torch.is_anomaly_check_nan_enabled()),
        "autocast": (torch.is_autocast_enabled("cpu"), torch.get_autocast_dtype("cpu")),
        "fwd_grad": tp.fwd_grad_enabled(),
        "cuda_rng": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else [],
    }


def assert_same(before: dict, after: dict) -> None:
    assert torch.equal(before["torch_rng"], after["torch_rng"])
    assert len(before["cuda_rng"]) == len(after["cuda_rng"])
    assert all(torch.equal(a, b) for a, b in zip(before["cuda_rng"], after["cuda_rng"],
                                                         strict=True))
    assert numpy.array_equal(before["numpy_rng"], after["numpy_rng"])
    for key in ("python_rng", "grad", "flags", "default_device", "hooks", "modes",
                "saved_tensors_hooks", "threads", "anomaly", "autocast", "fwd_grad"):
        assert before[key] == after[key], key


USER_MODEL = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))


def user_model_provider():
    """Hands out the user's own object, as a careless provider would."""
    return USER_MODEL


def inputs(batch_size=4):
    return torch.randn(batch_size, 8), torch.randint(0, 2, (batch_size,))


HOOKS_BEFORE = sum(map(len, tp.global_hook_keys().values()))


def in_instrumented_run() -> bool:
    """True inside level 2/3, where the profiler's global module hooks are installed."""
    return sum(map(len, tp.global_hook_keys().values())) > HOOKS_BEFORE


def make_iteration_provider(fail_on_call=None, exception=KeyboardInterrupt):
    """``fail_on_call``: a call number, "instrumented" (first call under the tracker) or None."""
    calls = {"n": 0}

    def iteration_provider(model):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.5, momentum=0.9)
        torch.backends.cudnn.benchmark = True  # a provider flipping a global flag
        torch.set_float32_matmul_precision("medium")

        def iteration(x, y):
            calls["n"] += 1
            if calls["n"] == fail_on_call or (
                fail_on_call == "instrumented" and in_instrumented_run()
            ):
                raise exception("stop")
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()

        return iteration

    return iteration_provider, calls


def run(iteration_provider, model_provider=user_model_provider):
    return profile(model_provider, inputs, iteration_provider, device="cpu", predict=False)


def test_user_model_and_session_untouched_after_return():
    weights = {k: v.clone() for k, v in USER_MODEL.state_dict().items()}
    before = snapshot()
    provider, calls = make_iteration_provider()
    report = run(provider)
    assert calls["n"] > 5 and report.iteration_ms > 0
    assert_same(before, snapshot())
    for key, value in USER_MODEL.state_dict().items():
        assert torch.equal(value, weights[key]), key
    assert all(p.grad is None for p in USER_MODEL.parameters())


@pytest.mark.parametrize("fail_on_call", [1, 4, "instrumented"])
def test_keyboard_interrupt_inside_the_iteration_propagates_and_restores(fail_on_call):
    # call 1: first warm-up (CPU live-storage tracker active); 4: level-1 timing blocks
    weights = {k: v.clone() for k, v in USER_MODEL.state_dict().items()}
    before = snapshot()
    provider, calls = make_iteration_provider(fail_on_call)
    with pytest.raises(KeyboardInterrupt):
        run(provider)
    assert calls["n"] == fail_on_call or fail_on_call == "instrumented"
    assert_same(before, snapshot())
    for key, value in USER_MODEL.state_dict().items():
        assert torch.equal(value, weights[key]), key


def test_user_exception_is_wrapped_and_session_restored():
    before = snapshot()
    provider, _calls = make_iteration_provider("instrumented", exception=ValueError)
    with pytest.raises(ProviderError, match="raised ValueError: stop") as info:
        run(provider)
    assert isinstance(info.value.__cause__, ValueError)
    assert_same(before, snapshot())


def test_grad_mode_is_restored_when_called_under_no_grad():
    with torch.no_grad():
        report = profile(
            cnn.skyline_model_provider, cnn.skyline_input_provider,
            cnn.skyline_iteration_provider, batch_size=2, device="cpu", predict=False,
        )
        assert not torch.is_grad_enabled()
    assert report.tree.backward_ms is not None and report.tree.backward_ms > 0


def test_a_dispatch_mode_the_step_leaves_on_the_stack_is_taken_off():
    """A step that enters a dispatch mode and never leaves it (``mode.__enter__()`` in a
    notebook cell's experiment): putting the stack back raised TypeError (torch 2.13's
    ``_pop_torch_dispatch_stack`` takes the mode's key), after the profile had finished."""
    from torch.utils._python_dispatch import TorchDispatchMode

    class Passing(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            return func(*args, **(kwargs or {}))

    before = snapshot()
    left: list[TorchDispatchMode] = []

    def iteration_provider(model):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

        def iteration(x, y):
            if not left:
                left.append(Passing())
                left[0].__enter__()
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x), y).backward()
            optimizer.step()

        return iteration

    report = run(iteration_provider, lambda: nn.Sequential(nn.Linear(8, 2)))
    assert report.iteration_ms > 0
    assert_same(before, snapshot())


def test_a_step_that_steps_the_users_own_optimizer_is_refused_before_it_runs():
    """The notebook's pattern: ``opt`` built over the model the user keeps, and a step that
    uses it. The profile trains a copy of the model, which that optimizer never updates, while
    every profiled step zeroed and stepped the user's (an Adam's step count 5 → 140, its
    scheduler's learning rate 0.01 → 6e-07, the weights moved)."""
    model = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    sched = torch.optim.lr_scheduler.StepLR(opt, step_size=2)
    opt.zero_grad()
    nn.functional.cross_entropy(model(torch.randn(4, 8)), torch.randint(0, 2, (4,))).backward()
    opt.step()
    sched.step()
    weights = {k: v.clone() for k, v in model.state_dict().items()}
    state, lr = copy.deepcopy(opt.state_dict()), opt.param_groups[0]["lr"]
    before = snapshot()

    def iteration_provider(given):
        def iteration(x, y):
            opt.zero_grad()
            nn.functional.cross_entropy(given(x), y).backward()
            opt.step()
            sched.step()
        return iteration

    with pytest.raises(ProviderError, match="uses 'opt', an optimizer over the parameters of "
                                            "the model you keep") as info:
        run(iteration_provider, lambda: model)
    assert "Build the optimizer inside the iteration provider" in str(info.value)
    assert_same(before, snapshot())
    for key, value in model.state_dict().items():
        assert torch.equal(value, weights[key]), key
    assert opt.param_groups[0]["lr"] == lr and sched.last_epoch == 1
    assert str(opt.state_dict()) == str(state)


def test_autocast_and_forward_ad_a_step_leaves_changed_are_put_back():
    """A step that turns autocast on and forward-mode AD off and never back (torch state the
    profiler promises to keep): they stayed changed after the profile."""
    before = snapshot()

    def iteration_provider(model):
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)

        def iteration(x, y):
            torch.set_autocast_enabled("cpu", True)
            torch._C._set_fwd_grad_enabled(False)
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x).float(), y).backward()
            optimizer.step()

        return iteration

    run(iteration_provider, lambda: nn.Sequential(nn.Linear(8, 2)))
    assert_same(before, snapshot())


def test_a_profile_called_under_inference_mode_measures_the_step():
    """Inside ``torch.inference_mode()`` every step raised "element 0 of tensors does not
    require grad", reported as the user's step failing."""
    with torch.inference_mode():
        report = run(make_iteration_provider()[0], lambda: nn.Sequential(nn.Linear(8, 2)))
        assert torch.is_inference_mode_enabled()
    assert report.iteration_ms > 0 and report.tree.backward_ms > 0


def test_the_float32_matmul_precision_a_provider_sets_is_put_back_whole():
    """``set_float32_matmul_precision("medium")`` in the iteration provider (the legacy API):
    torch 2.9+'s per-backend precisions were put back, the legacy one still read "medium", and
    reading ``allow_tf32`` raised for the mix of the two APIs."""
    precision = torch.get_float32_matmul_precision()
    run(make_iteration_provider()[0])
    assert torch.get_float32_matmul_precision() == precision
    assert isinstance(torch.backends.cuda.matmul.allow_tf32, bool)


def test_an_input_the_user_keeps_keeps_its_gradient():
    """An input provider that returns the user's own tensor, which requires grad and holds a
    gradient of theirs (a saliency batch): after the profile its ``.grad`` was None (the
    samples' inputs took it over) or summed into by every step."""
    batch = torch.randn(4, 8, requires_grad=True)
    batch.grad = torch.full_like(batch, 0.5)
    grad = batch.grad
    labels = torch.randint(0, 2, (4,))

    def user_inputs(batch_size=4):
        if batch_size == 4:
            return batch, labels
        return torch.randn(batch_size, 8, requires_grad=True), torch.randint(0, 2, (batch_size,))

    profile(lambda: nn.Sequential(nn.Linear(8, 2)), user_inputs, make_iteration_provider()[0],
            device="cpu")
    assert batch.grad is grad and torch.equal(grad, torch.full_like(batch, 0.5))


@pytest.mark.parametrize("raises", [False, True])
def test_global_settings_a_provider_flips_are_put_back(raises):
    """A model provider that sets a default device, flushes denormals, turns a fused attention
    kernel off, warns always and trims the print options: each of them stayed changed in the
    user's session after a profile, and the default device's context was left set with its
    mode taken off the stack (``torch.get_default_device()`` said one thing, new tensors did
    another)."""

    def model_provider():
        torch.set_default_device("cpu")
        torch.set_flush_denormal(True)
        torch.backends.cuda.enable_flash_sdp(False)
        torch.set_warn_always(True)
        torch.set_printoptions(precision=2, linewidth=40)
        return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))

    fails = make_iteration_provider(fail_on_call=3, exception=RuntimeError)[0]
    before = snapshot()
    assert before["default_device"] is None
    assert before["flags"]["flush_denormal"] is False
    if raises:
        with pytest.raises(ProviderError):
            run(fails, model_provider)
    else:
        run(make_iteration_provider()[0], model_provider)
    assert_same(before, snapshot())
    assert sys.float_info.min * 0.25 > 0  # subnormals again
    assert torch.backends.cuda.flash_sdp_enabled()
    assert not torch.is_warn_always_enabled()
    assert torch._tensor_str.PRINT_OPTS.precision == before["flags"]["print_options"]["precision"]
    assert not hasattr(torch._GLOBAL_DEVICE_CONTEXT, "device_context") or (
        torch._GLOBAL_DEVICE_CONTEXT.device_context is None)


def test_the_users_own_default_device_stays_set_under_the_measurements_modes():
    """The user set a default device before the profile and the provider sets another: the
    user's is back, its context at the bottom of the function-mode stack as torch keeps it."""
    torch.set_default_device("cpu")
    try:
        depth = tp.mode_stack_depths()

        def model_provider():
            torch.set_default_device("meta")
            torch.set_default_device(None)
            return nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))

        run(make_iteration_provider()[0], model_provider)
        assert tp.default_device_set() == torch.device("cpu")
        assert tp.mode_stack_depths() == depth
        assert torch.zeros(1).device == torch.device("cpu")
    finally:
        torch.set_default_device(None)
    assert tp.mode_stack_depths()[1] == 0
