"""What ``profile()`` and "Measure at N" share before measuring: the device, which code is the
user's, the checked providers and the batch size, so both measure under the same rules (memory
budget, project root, notebook cells) and fail with the same messages.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from skyline_nb.profiler import allocator
from skyline_nb.profiler.compiled import quiet_compiled_module_warning
from skyline_nb.profiler.device import Device, resolve_device
from skyline_nb.profiler.errors import ProviderSignatureError
from skyline_nb.profiler.isolation import isolated
from skyline_nb.profiler.iteration import IterationResult, measure_level1
from skyline_nb.profiler.memory import tensor_bytes, unique_parameters
from skyline_nb.profiler.op_mode import load_mode_machinery
from skyline_nb.profiler.providers import Providers, build_trial, load_providers
from skyline_nb.profiler.stacks import CellLookup, UserCode, default_project_root


@dataclass
class Measured(IterationResult):
    """"Measure at N": level 1's result, and the bytes of the measured model's parameters by
    name (as ``Report.weights``), which tell whether it is the profile's model."""

    weights: dict[str, int] = field(default_factory=dict)


@dataclass
class Prepared:
    """A checked request: where to run, whose code it is, the providers and the batch size."""

    device: Device
    user_code: UserCode
    providers: Providers
    batch_size: int


def prepare(
    model_provider: Callable[[], Any],
    input_provider: Callable[..., Any],
    iteration_provider: Callable[[Any], Callable[..., Any]],
    *,
    batch_size: int | None = None,
    device: Any = None,
    project_root: str | Path | None = None,
    memory_budget: int | None = None,
    cells: CellLookup | None = None,
) -> Prepared:
    """Resolve the device, the user's code and the providers; raise on bad input (see
    ``profile``)."""
    dev = resolve_device(device, memory_budget)
    root = Path(project_root) if project_root is not None else default_project_root(
        model_provider, input_provider, iteration_provider, cells=cells)
    user_code = UserCode(root, cells)
    providers = load_providers(model_provider, input_provider, iteration_provider, user_code)
    size = batch_size if batch_size is not None else providers.default_batch_size
    if size is None:
        raise ProviderSignatureError(
            f"no batch size: pass batch_size= or give `batch_size` a default in "
            f"{providers.where(input_provider)}"
        )
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        raise ValueError(f"batch_size must be a positive integer, not {size!r}")
    allocator.settle()  # every measurement in the steady state of the host allocator
    load_mode_machinery()  # torch's first use of a dispatch mode: not inside a measurement
    quiet_compiled_module_warning()  # resets the warnings' registry: before the user's steps
    return Prepared(dev, user_code, providers, size)


def measure_iteration(
    model_provider: Callable[[], Any],
    input_provider: Callable[..., Any],
    iteration_provider: Callable[[Any], Callable[..., Any]],
    batch_size: int,
    device: Any = None,
    *,
    memory_budget: int | None = None,
    project_root: str | Path | None = None,
    cells: CellLookup | None = None,
) -> Measured:
    """One uninstrumented, isolated measurement at ``batch_size`` on a fresh model ("Measure at
    N"): the profile's level 1, with its precision; its ``timing`` says how the steps varied
    and whether they waited for a busy CPU (``sample()``: the numbers alone). Raises the
    device's OOM type (``torch.OutOfMemoryError`` on CUDA, ``CPUOutOfMemoryError`` when a CPU
    ``memory_budget`` is exceeded) when the batch does not fit, ``ModelOOMError`` when the
    model alone does not.
    """
    run = prepare(model_provider, input_provider, iteration_provider, batch_size=batch_size,
                  device=device, project_root=project_root, memory_budget=memory_budget,
                  cells=cells)
    with isolated(run.device):
        result, warm = measure_level1(
            lambda: build_trial(run.providers, run.batch_size, run.device), run.device,
            run.batch_size)
        weights = {name: tensor_bytes(p) for name, p in unique_parameters(warm.trial.model)}
        del warm
    return Measured(**{f.name: getattr(result, f.name) for f in fields(result)}, weights=weights)
