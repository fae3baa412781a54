"""What "Measure at N" tells the widget, and the report it leaves behind.

The widget compares the measurement with the prediction the report made for N before it was
taken (``predicted_ms``, ``predicted_peak_bytes``: kept here, since the report may change),
and N joins the report's samples (``models.joined``) when the curve through all of them is one
the profile itself would drag on. Steps that waited for a busy CPU join too, as the profile's
own samples on a busy machine do: the widget says a quieter machine may run it faster, the
curve goes through what the user was shown, and a measurement at N again replaces it. Refusing
them left the feature all but unseen in JupyterLab on a 2-core machine, where chromium's work
beside the kernel made the Llama-style model's steps at 60 wait in both of two tries (session 44).

N goes in as measured, as the profile's own samples do (each timed in a block of its own on the
warm model), so the curve goes through the number the widget shows for it. A ratio to the
profile's batch size timed right after N on the same model, to take out a host whose pace
moved since the profile, was tried and left out (session 44): it drew the curve away from that
number (the example CNN at 128: 177 ms measured, 147 ms by the ratio), at the cost of another
measurement, and on this VM the ratio's reference moves too (fresh measurements at 8 read 9.2,
11.0, 13.4 and 14.7 ms within a minute, 128 read 130 and 160).

On a CPU, a size whose predicted peak with the heap a process keeps beside its tensors would
outgrow the RAM the kernel may still take is not measured (``outgrows``): nothing stops such a
step but the kernel's death, with the notebook's state (in a container: its memory limit), and
the drag reaches no further than the same rule allows right after the samples
(``Device.step_capacity_bytes``), so it offers no size "Measure at N" would refuse then.

Else ``not_joined`` says why, and the report stays as it was; also where the model measured is
not the profile's (its parameters differ): a widget holds the providers it was made from
(``request``), yet their code may build another model since, where a class or a function they
call was defined again under the same name in a later cell; that is said at any size, the
profile's own too ("Measure at N" offers it first: a conv net's widget showed 84,455
samples/s and 291 KiB measured under its header's 137 and 33.3 MiB, from a class redefined as
one Linear, and said nothing). Else a measurement at the profile's own batch size is its
headline again, and one of a profile without predictions (``--no-predict``) has no curve:
neither joins anything, nor says so.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from skyline_nb.export.units import format_bytes
from skyline_nb.models.joined import NotJoined, with_time_sample
from skyline_nb.models.performance import PerformanceModels
from skyline_nb.profiler.cgroup import memory_headroom
from skyline_nb.profiler.device import HEAP, available_ram_bytes, trim_heap
from skyline_nb.profiler.timing import HEADLINE
from skyline_nb.report import Report, Sample

if TYPE_CHECKING:
    from skyline_nb.profiler.prepare import Measured


class WouldOutgrowMemory(Exception):
    """A measurement not taken: its step would likely get the kernel killed (``outgrows``)."""


def outgrows(report: Report | None, batch_size: int) -> str | None:
    """Why measuring at ``batch_size`` on a CPU would likely outgrow the RAM this kernel may
    still take (its container's limit less its usage, where one binds), its heap's free pages
    given back first (``trim_heap``: a larger step's tensors could not reuse them), or None."""
    models = report.models if report is not None else None
    if report is None or report.device.kind != "cpu" or models is None or models.memory is None:
        return None
    trim_heap()
    free, need = available_ram_bytes(), models.predict_peak_bytes(batch_size)
    if free <= 0 or HEAP * need <= free:  # unknown, or room enough
        return None
    where = ("its container's memory limit less its usage" if memory_headroom() is not None
             else "the RAM free now")
    return (f"measuring at batch size {batch_size} would likely need more than the "
            f"{format_bytes(free)} this kernel may still take ({where}): its tensors alone are "
            f"predicted to peak at {format_bytes(need)}, and a process keeps more beside them "
            "(a loop's usage rose up to 42 % above its tracked peak). A process that outgrows "
            "its memory is killed, with the notebook's state; measure at a smaller batch size")


def measured(report: Report | None, result: Measured) -> tuple[Report | None, dict[str, Any]]:
    """The report with ``result`` joined (or ``report`` itself), and the ``measurement`` trait."""
    timing = result.timing  # how its steps varied, whether they waited: the noise it shows
    models = report.models if report is not None else None
    before = models is not None and models.can_manipulate
    value: dict[str, Any] = {
        "batch_size": result.batch_size, "iteration_ms": result.iteration_ms,
        "waited": result.waited, "peak_bytes": result.peak_bytes,
        "throughput": result.throughput, "steps": len(timing.counted(HEADLINE)),
        "spread": timing.spread(HEADLINE),
        "predicted_ms": models.predict_iteration_ms(result.batch_size) if before else None,
        "predicted_peak_bytes": models.predict_peak_bytes(result.batch_size) if before else None,
        "joined": False, "not_joined": None, "curve_kept": False,
        "other_model": report is not None and not _same_model(report, result),
    }
    if report is not None and value["other_model"]:  # at any size, the profile's own too
        value["not_joined"] = _other_model(report, result)
        return report, value
    if models is None or report.batch_size == result.batch_size:
        return report, value
    try:
        joined = _joined(report, models, result)
    except NotJoined as exc:
        value["not_joined"] = str(exc)
        return report, value
    value["joined"] = True
    value["curve_kept"] = joined.models.time.lines == models.time.lines
    return joined, value


def parameters_of(report: Report) -> dict[str, int]:
    """The bytes of the profiled model's parameters by name: what tells one model from
    another (``Measured.weights`` for a measurement)."""
    return {w.name: w.bytes for w in report.weights}


def other_parameters(now: dict[str, int], then: dict[str, int], whose: str) -> str | None:
    """None where ``now`` and ``then`` (``parameters_of``) are the same parameters; else how
    they differ: "its parameters hold 66.8 KiB in 4 tensors, {whose} 1.52 MiB in 6"."""
    if now == then:
        return None
    return (f"its parameters hold {format_bytes(sum(now.values()))} in {len(now)} tensors, "
            f"{whose} {format_bytes(sum(then.values()))} in {len(then)}")


def _same_model(report: Report, result: Measured) -> bool:
    return result.weights == parameters_of(report)


def _other_model(report: Report, result: Measured) -> str:
    differ = other_parameters(result.weights, parameters_of(report), "the profile's")
    return (f"the model measured is not this profile's: {differ}. A "
            "class or function the providers use was defined again since the profile; run the "
            "providers' cell again, or Re-profile to profile the model they build now")


def _joined(report: Report, models: PerformanceModels, result: Measured) -> Report:
    """``report`` with ``result`` among its samples (replacing one at its size) and its
    models' time curve through them (``with_time_sample``); raises ``NotJoined``."""
    size, ms = result.batch_size, result.iteration_ms
    joined = with_time_sample(models, [s.batch_size for s in report.samples],
                              [s.iteration_ms for s in report.samples], size, ms)
    samples = [replace(s, iteration_ms=ms) if s.batch_size == size else s for s in report.samples]
    if all(s.batch_size != size for s in samples):
        samples = sorted([*samples, Sample(size, ms, result.peak_bytes)],
                         key=lambda s: s.batch_size)
    return replace(report, samples=samples, models=joined)
