"""A Ctrl+C at any moment of a profile leaves the user's session exactly as it was.

A real SIGINT is raised (``signal.raise_signal``) at a chosen Python call inside ``profile()``
— the n-th call of a named function (each level, inside sampling, inside the restore itself) or
the n-th call of any function (spread over the whole profile) — so Python's own handler
delivers KeyboardInterrupt where the kernel's interrupt would. After each: the same RNG states,
threads, grad and anomaly modes, flags, global hooks, mode stacks, saved-tensor hooks, no
profiler left running, and the user's model and optimizer untouched.

The checks run in a fresh interpreter (this file as a script, all cases in one child) with
SIGINT unblocked and Python's own handler, as in a kernel's main thread: in CI's whole test
session, after the browser tests, a raised SIGINT reached neither the profile nor Python's
"Exception ignored" path (the session had SIGINT blocked, and a child inherits the mask), so
what was tested was the test session, not the profiler.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
import torch
from test_profiler_isolation import assert_same, snapshot
from torch import nn

from skyline_nb.profiler import torch_private as tp
from skyline_nb.profiler.session import profile

pytestmark = pytest.mark.slow  # about 20 profiles under a Python profile hook

USER_MODEL = nn.Sequential(nn.Linear(8, 16), nn.ReLU(), nn.Linear(16, 2))
USER_OPTIMIZER = torch.optim.Adam(USER_MODEL.parameters(), lr=0.01)


def model_provider():
    return USER_MODEL  # the user's own object: the profiler must train a copy


def input_provider(batch_size=4):
    return torch.randn(batch_size, 8), torch.randint(0, 2, (batch_size,))


def iteration_provider(model):
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)

    def iteration(x, y):
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()

    return iteration


def run_profile() -> None:
    profile(model_provider, input_provider, iteration_provider, device="cpu")


class Calls:
    """A ``sys.setprofile`` hook counting Python calls; raises SIGINT at the chosen one."""

    def __init__(self, name: str | None = None, at: int = 0) -> None:
        self.name, self.at, self.count, self.names = name, at, 0, set()
        self.swallowed: list[type[BaseException]] = []

    def __call__(self, frame, event, _arg) -> None:
        if event != "call":
            return
        name = frame.f_code.co_qualname
        self.names.add(name)
        if self.name is None or name == self.name:
            self.count += 1
            if self.count == self.at:
                sys.setprofile(None)
                signal.raise_signal(signal.SIGINT)


@contextmanager
def profiled(hook: Calls) -> Iterator[Calls]:
    """The hook on, and Python's "Exception ignored in ..." recorded in ``hook.swallowed``: an
    interrupt landing in a finalizer or a generator being closed is dropped by Python itself
    (as a user's Ctrl+C would be there); the profile then runs to its end."""
    swallowed = hook.swallowed
    unraisable = sys.unraisablehook
    sys.unraisablehook = lambda info: swallowed.append(info.exc_type)
    sys.setprofile(hook)
    try:
        yield hook
    finally:
        sys.setprofile(None)
        sys.unraisablehook = unraisable


def total_calls() -> Calls:
    with profiled(Calls()) as counted:
        run_profile()
    return counted


TOTAL = None


def _total() -> Calls:
    global TOTAL
    if TOTAL is None:
        TOTAL = total_calls()
    return TOTAL


# Named places: (qualified name, which call). Each level, sampling, and the restore itself.
PLACES = [
    ("_tracked_warmup", 1),
    ("AllocatorReports.__exit__", 1),
    ("time_steps", 1),
    ("WarmTrial.peak_at", 2),
    ("WarmTrial.time_at", 1),
    ("timed_chunk", 5),
    ("OperationTracker.__enter__", 1),
    ("SavedTensorTracker.active", 1),
    ("op_times", 1),
    ("build_tree", 1),
    ("_restore", 1),
    ("remove_global_hooks_since", 1),
    ("interrupts_held", 1),
]


def _check_anywhere(fraction: float) -> None:
    """An interrupt at ``fraction`` of a profile's calls. A profile's call count varies with
    what it measured (instrumented runs retried, reconciling stopped early): a profile that
    ended before the chosen call raised nothing, so it is aimed again at the same fraction of
    that profile's own count (3 tries), instead of being read as a lost interrupt."""
    total = _total().count
    for _ in range(3):
        hook = Calls(None, max(1, int(fraction * total)))
        try:
            _check(hook)
            return
        except AssertionError:
            if hook.count >= hook.at:  # it was raised: a real failure
                raise
            total = hook.count  # it never fired: this profile made fewer calls
    raise AssertionError(f"3 profiles ended before {fraction:.0%} of their calls")


def _check(hook: Calls) -> None:
    weights = {k: v.clone() for k, v in USER_MODEL.state_dict().items()}
    optimizer_state = repr(USER_OPTIMIZER.state_dict())
    before = snapshot()
    try:
        with profiled(hook):
            run_profile()
    except KeyboardInterrupt:
        pass
    else:
        assert hook.swallowed == [KeyboardInterrupt], "the interrupt was lost"
    assert hook.count >= hook.at, f"{hook.name} was called {hook.count} times, not {hook.at}"
    assert_same(before, snapshot())
    assert not tp.profiler_running()
    for key, value in USER_MODEL.state_dict().items():
        assert torch.equal(value, weights[key]), key
    assert all(p.grad is None for p in USER_MODEL.parameters())
    assert repr(USER_OPTIMIZER.state_dict()) == optimizer_state


# Fractions of the calls a whole profile makes (that count varies by a few % between runs,
# with the number of timed iterations).
FRACTIONS = [0.02, 0.15, 0.3, 0.45, 0.6, 0.75]


def _named(name: str, at: int) -> None:
    assert name in _total().names, f"{name} is not called by profile(): update PLACES"
    _check(Calls(name, at))


def _run_all() -> dict[str, str]:
    """Every case in this process: its id → "ok" or what failed."""
    cases = [(name, lambda n=name, a=at: _named(n, a)) for name, at in PLACES]
    cases += [(f"anywhere {f}", lambda f=f: _check_anywhere(f)) for f in FRACTIONS]
    verdicts = {}
    for case, run in cases:
        try:
            run()
            verdicts[case] = "ok"
        except AssertionError as exc:
            verdicts[case] = f"{type(exc).__name__}: {exc}"
    return verdicts


@pytest.fixture(scope="module")
def verdicts() -> dict[str, str]:
    here = Path(__file__).resolve()
    env = {**os.environ,
           "PYTHONPATH": os.pathsep.join([str(here.parent), str(here.parents[2])])}
    done = subprocess.run([sys.executable, str(here)], capture_output=True, text=True,
                          env=env, timeout=600, check=False)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.parametrize("name", [name for name, _ in PLACES])
def test_an_interrupt_at_a_named_place_leaves_no_trace(verdicts: dict[str, str],
                                                       name: str) -> None:
    assert verdicts[name] == "ok"


@pytest.mark.parametrize("fraction", FRACTIONS)
def test_an_interrupt_anywhere_leaves_no_trace(verdicts: dict[str, str], fraction: float) -> None:
    assert verdicts[f"anywhere {fraction}"] == "ok"


if __name__ == "__main__":
    # A child inherits its parent's signal mask: a test session that blocked SIGINT (seen in
    # CI after the browser tests) would hold every raised SIGINT pending. A kernel's main
    # thread takes SIGINT; so does this one.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    signal.signal(signal.SIGINT, signal.default_int_handler)
    print(json.dumps(_run_all()))
