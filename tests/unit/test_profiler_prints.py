"""An iteration that prints is profiled without its prints flooding the output (it runs dozens
of times), the report says what was held back, and a failing profile shows them after all."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from skyline_nb.profiler.errors import ProviderError
from skyline_nb.profiler.session import profile


def _providers(fail_at: int | None = None) -> tuple:
    def model() -> nn.Module:
        return nn.Linear(8, 2)

    def inputs(batch_size: int = 16) -> tuple:
        return torch.randn(batch_size, 8), torch.randint(0, 2, (batch_size,))

    def iteration_of(net: nn.Module):
        optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
        steps = [0]

        def iteration(x, y) -> None:
            steps[0] += 1
            print(f"step {steps[0]}: loss computed")
            if steps[0] == fail_at:
                raise ValueError("shapes went wrong")
            optimizer.zero_grad()
            nn.functional.cross_entropy(net(x), y).backward()
            optimizer.step()
        return iteration
    return model, inputs, iteration_of


def test_prints_are_held_back_and_summarized(capsys) -> None:
    print("before")
    report = profile(*_providers(), device="cpu")
    print("after")
    assert capsys.readouterr().out == "before\nafter\n"
    held = [w for w in report.warnings if w.startswith("the iteration printed")]
    assert len(held) == 1
    assert " lines while it was profiled" in held[0]
    assert held[0].endswith(": loss computed") and "the last: step " in held[0]


def test_a_failing_profile_shows_what_the_iteration_printed(capsys) -> None:
    with pytest.raises(ProviderError, match=r"shapes went wrong \(at line 29\)"):
        profile(*_providers(fail_at=3), device="cpu")
    printed = capsys.readouterr().out
    assert printed == "".join(f"step {k}: loss computed\n" for k in (1, 2, 3))


def test_a_stream_the_step_kept_writes_to_the_output_after_the_profile(capsys) -> None:
    """A provider that sets up logging to ``sys.stdout`` while it is profiled keeps the stream
    it found: everything it logged after the profile went into the held buffer, lost."""
    import logging

    model, inputs, iteration_of = _providers()
    logger = logging.getLogger("skyline_nb.test.kept_stream")
    logger.propagate = False

    def logging_iteration_of(net: nn.Module):
        if not logger.handlers:
            logger.addHandler(logging.StreamHandler(__import__("sys").stdout))
        return iteration_of(net)

    try:
        profile(model, inputs, logging_iteration_of, device="cpu", predict=False)
        capsys.readouterr()
        logger.warning("after the profile")
        assert capsys.readouterr().out == "after the profile\n"
    finally:
        logger.handlers.clear()


def test_what_the_model_provider_writes_to_stderr_shows_in_a_script() -> None:
    """In a script (``sys.stderr`` is descriptor 2) the model provider's stderr and a layer's
    constructor warning were lost: level 1 builds the model while torch's native logging is
    silenced on that descriptor."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import sys, warnings, torch
        from torch import nn
        from skyline_nb.profiler.session import profile

        def model():
            print("building the model", file=sys.stderr)
            warnings.warn("a layer's own warning")
            return nn.Linear(8, 2)

        def inputs(batch_size=16):
            return torch.randn(batch_size, 8), torch.randint(0, 2, (batch_size,))

        def iteration_of(net):
            optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
            def step(x, y):
                optimizer.zero_grad()
                nn.functional.cross_entropy(net(x), y).backward()
                optimizer.step()
            return step

        profile(model, inputs, iteration_of, device="cpu", predict=False)
        print("after", file=sys.stderr)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=True)
    assert "building the model" in done.stderr
    assert "a layer's own warning" in done.stderr
    assert done.stderr.rstrip().endswith("after")


def test_a_warning_of_the_step_shows_once_as_in_the_users_loop() -> None:
    """A warning Python shows once per place (a loss on shapes that broadcast) showed at every
    instrumented run, 9 times in one profile: each run's ``warnings.catch_warnings()`` reset
    the registry of warnings shown."""
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent("""
        import torch
        from torch import nn
        from skyline_nb.profiler.session import profile

        def iteration_of(net):
            optimizer = torch.optim.SGD(net.parameters(), lr=0.1)
            def step(x, y):
                optimizer.zero_grad()
                nn.functional.mse_loss(net(x), y).backward()  # (16, 1) against (16,)
                optimizer.step()
            return step

        profile(lambda: nn.Linear(8, 1), lambda batch_size=16: (torch.randn(batch_size, 8),
                torch.randn(batch_size)), iteration_of, device="cpu", predict=False)
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, check=True)
    assert done.stderr.count("UserWarning") == 1, done.stderr
