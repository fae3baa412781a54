"""The ends of the drag range, tried where the samples did not reach them.

The drag reaches from batch size 1 to 8× the largest sample (``PerformanceModels``), and the
user's code may fail at sizes the samples never ran: batch norm over one sample, a
``squeeze()`` that drops the batch dimension at batch 1; an input provider that slices a
dataset of 150 rows (``X[:batch_size]``, or a ``DataLoader`` over it), which at 256 returns
150. A size where it fails becomes a refusal (``sampling.Refusal``), as one met while sampling
does: the drag stops short of it and the report quotes the error. Both are tried after
everything timed, so nothing measured waits for them, and neither becomes a sample.

- The bottom: one plain iteration at batch 1 (the cheapest of all: 0.1–0.7 of the user's
  iterations for the example CNN, Transformer and LSTM; BENCHMARKS.md, session 22).
- The top: only the inputs (an iteration there costs what 8× the batch costs), and only where
  the input provider is cheap: its measured time so far, scaled to the size, within
  ``TOP_SHARE`` of the user's iteration (at least ``TOP_FLOOR_MS``). A slice of a tensor costs
  microseconds at any size; a provider that makes its inputs anew (``randn``, which never runs
  out of rows) costs what the batch costs and is not asked. Where the inputs at the top fail,
  or a size above the samples was refused, the smallest failing size is searched for by
  halving, within ``NARROW_FLOOR_MS`` at least (a dataset of 24 rows refused at 32 moved the
  drag's top from 31 to 24).
"""

from __future__ import annotations

import math

from skyline_nb.categories import Categories
from skyline_nb.models.performance import PerformanceModels
from skyline_nb.profiler.device import Device
from skyline_nb.profiler.errors import ProviderError
from skyline_nb.profiler.iteration import IterationResult, WarmTrial
from skyline_nb.profiler.providers import InputsAtAnySize
from skyline_nb.profiler.samples import Sampled, fitted
from skyline_nb.profiler.sampling import Refusal, fails_above
from skyline_nb.report import Sample

TOP_SHARE = 0.1
TOP_FLOOR_MS = 5.0
# Once a size above is known to fail, finding the smallest such costs ~log2(range) calls: a
# DataLoader over 150 rows (~0.5 ms a call) stopped at 192 within 2 ms, and the drag went on
# past 150 for want of 3 more calls.
NARROW_FLOOR_MS = 25.0


def fitted_within_ends(
    warm: WarmTrial, level1: IterationResult, sampled: Sampled, dev: Device,
    categories: Categories, warnings: list[str],
) -> tuple[list[Sample], PerformanceModels]:
    """``samples.fitted``, after the ends of the drag range were tried (the top's needs the
    curves' range: fitted again where a new refusal moved it)."""
    try_the_bottom(warm, sampled)
    said: list[str] = []
    samples, models = fitted(level1, sampled, dev, categories, said)
    if try_the_top(warm, sampled, models):
        said = []
        samples, models = fitted(level1, sampled, dev, categories, said)
    warnings.extend(said)
    return samples, models


def try_the_bottom(warm: WarmTrial, sampled: Sampled) -> None:
    """One plain iteration at batch size 1 where the samples stopped above it and nothing below
    the user's batch was refused: a refusal there starts the drag at 2."""
    user = warm.user.batch_size
    if (sampled.reason is not None or min(sampled.peaks) <= 1
            or any(r.batch_size < user for r in sampled.refused)):
        return
    try:
        warm.runs_at(1)
    except ProviderError as exc:  # their batch ran: the profile stands, the size does not
        why = str(exc).rstrip(".")
    except warm.device.oom_types:  # not at batch 1 when the user's batch fit; nothing to say
        return
    else:
        return
    sampled.refused.append(Refusal(1, why))  # outside the handler: no hold on its tensors


def try_the_top(warm: WarmTrial, sampled: Sampled, models: PerformanceModels) -> bool:
    """The inputs above the largest sample, where the input provider is cheap: the smallest
    size found to fail replaces the refusals above it. True when it moved the drag's top."""
    inputs_for = warm.inputs_for
    if not isinstance(inputs_for, InputsAtAnySize):
        return False  # a trial without an input provider: it cannot change size
    largest = max(sampled.peaks)
    refused = fails_above(sampled.refused, warm.user.batch_size)
    if refused is None:  # the top is tried first, where there is a drag to end
        if not models.can_manipulate or models.memory is None:
            return False
        top = models.max_batch_size()
        if top <= largest:
            return False
    share, spent_ms = TOP_SHARE * warm.user.iteration_ms, 0.0
    low, high = largest, refused  # ran; fails (None: not known)
    failed: Refusal | None = None
    while True:
        size = top if high is None else (low + high) // 2
        allowed_ms = max(share, TOP_FLOOR_MS if high is None else NARROW_FLOOR_MS)
        if size <= low or spent_ms + _cost_ms(inputs_for, size) > allowed_ms:
            break
        why = _inputs_fail(inputs_for, size, warm.device)
        spent_ms += inputs_for.ms.get(size, 0.0)
        if why is None and high is None:
            return False  # the inputs at the top follow it: nothing to narrow
        if why is None:
            low = size
        else:
            high, failed = size, Refusal(size, why)
    if failed is None:
        return False
    sampled.refused[:] = [r for r in sampled.refused if not r.batch_size > failed.batch_size]
    sampled.refused.append(failed)
    return True


def _cost_ms(inputs_for: InputsAtAnySize, size: int) -> float:
    """What making the inputs at ``size`` should take: each call so far scaled up to it (as
    a provider that makes its inputs anew costs), the cheapest (one call can be slow for
    reasons of its own: 0.67 ms against 0.05–0.1 ms for the same 4 rows)."""
    return min((ms * max(1.0, size / n) for n, ms in inputs_for.ms.items()), default=math.inf)


def _inputs_fail(inputs_for: InputsAtAnySize, size: int, device: Device) -> str | None:
    """Why the inputs at ``size`` cannot be made (the provider raised, or they do not follow
    the batch size), or None; they are dropped at once."""
    try:
        inputs_for(size)
    except ProviderError as exc:
        return str(exc).rstrip(".")
    except device.oom_types:
        return None  # memory, not the user's code: the capacity bounds the drag already
    return None
