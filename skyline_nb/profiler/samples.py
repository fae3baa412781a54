"""The profile's samples at other batch sizes, measured on its warm trial.

At each size ``sample_plan.sample_curve`` asks for: the peak (``WarmTrial.peak_at``), then the
time in a block of its own (``WarmTrial.time_at``), as a ratio of the user's headline;
``fitted`` turns them into the report's samples and performance models at the final headline.
How far a sample may sit from a simpler curve (the curves' tolerance) comes from the headline's
own spread, so a busy machine does not turn noise into bends.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

from skyline_nb.categories import Categories
from skyline_nb.export.units import format_ms
from skyline_nb.models.curve import BEND, FLAT, TOLERANCE
from skyline_nb.models.performance import PerformanceModels
from skyline_nb.models.trust import MAX_FLAT_SPREAD, spread
from skyline_nb.profiler.device import Device
from skyline_nb.profiler.errors import ProviderError
from skyline_nb.profiler.iteration import IterationResult, SampleTiming, WarmTrial
from skyline_nb.profiler.memory_run import OTHER_ROUNDING
from skyline_nb.profiler.progress import Reporter, covers
from skyline_nb.profiler.sample_plan import expected_ms, peak_window_ms, sample_curve
from skyline_nb.profiler.sampling import Refusal, SizeFailed, fails_above, fails_below
from skyline_nb.profiler.timing import HEADLINE, SAMPLE, Precision
from skyline_nb.report import Sample

SAMPLING_FLOOR_MS = 250.0
# Sizes the floor is lifted for where a CPU's short step runs untimed before each
# (``timing.SAMPLE``'s warm-up, counted in their cost): the floor's sizes, not fewer.
FLOOR_SIZES = 5
MAX_TOLERANCE = 0.15
# Issue 15's cost bar: sampling at most 1.5× the rest of the profile, which has run when the
# samples start (``session.py``). Until session 27 they ran right after level 1 and assumed
# the memory run and the op passes still to come would take 1.2× what had run (1.5–3.5× on an
# H100 for the stock examples, sessions 16 and 18); an H100's LSTM of width 1024, whose op
# passes are few and short, then sampled 1.98–2.24× its profile (BENCHMARKS.md, session 26).
COST_BAR = 1.5


@dataclass(frozen=True)
class SamplingPolicy:
    """How a device's samples are taken: how precisely each size is timed, how many of the
    user's iterations they may take in all (at least ``SAMPLING_FLOOR_MS``; None: issue 15's
    bar over the profile instead, ``sampling_budget_ms``), and the multiple of the user's batch
    they may extend to beyond 4× within that budget (``sample_plan``)."""

    precision: Precision
    budget: int | None
    reach: int
    between: bool = False  # sizes halfway between powers of two once the range is measured


# A CPU: samples timed as ``timing.SAMPLE`` says; 13 of the user's iterations, so that with
# the profile's own ~17 the whole stays near 30 (BENCHMARKS.md); to 8× where the budget
# reaches (a step of a few ms rarely affords even 4×). Where the floor lifts it (iterations
# under 20 ms) it costs at most 0.25 s and 1.5× the profile, which a sub-millisecond MLP's drag
# needs (in a notebook whose browser shares the cores, its curve is refused without a wide
# range: ``sample_plan``), and which takes it to 8×: at 2 threads its time per sample falls
# beyond 4×, and a curve through samples to 4× read 8–20 % high at 6–8× (BENCHMARKS.md,
# session 30).
CPU_SAMPLING = SamplingPolicy(SAMPLE, 13, 8)
# A GPU: iterations of a few ms cost little to time as well as the headline (10 ms samples gave
# 5.7–61 % errors on an H100 where 25 ms gave 1.8–5.9 %); the rest of a profile takes 50–580 of
# the user's iterations there (op timing, the memory run, building the trial: stage_cost.py on
# an H100), so no count of them bounds the samples but the bar over the profile itself: 45 of
# them (sessions 15–16) took the 3.7 ms CNN's samples to 1.86× its profile, while the 1.8 ms
# MLP's, whose op timing is long, took 0.27× and stopped short of its range; and to 16×, issue
# 15's held-out range (an H100's MLP measured to 4× was 7.7 % off up to 16×); then halfway
# between the powers of two measured (``sample_plan``). BENCHMARKS.md.
CUDA_SAMPLING = SamplingPolicy(HEADLINE, None, 16, between=True)


@dataclass
class Sampled:
    """Level 1 at the other batch sizes, before the headline is final."""

    peaks: dict[int, int]
    categories: dict[int, Categories]
    timings: list[SampleTiming]
    reason: str | None
    tolerance: float
    # peak bytes per phase at each size, the user's included (``phases.py``); empty if unknown
    phases: dict[int, dict[str, int]]
    refused: list[Refusal]  # sizes where the user's providers raised
    between: list[Refusal] = field(default_factory=list)  # ... between two that ran


def tolerance_of(level1: IterationResult) -> float:
    """How far (relative) a sample may sit from a simpler curve and still be on it: three
    times the headline's median absolute deviation, within [3 %, 10 %]."""
    quiet = level1.timing.quiet() or level1.timing.kept()
    if len(quiet) < 3:
        return TOLERANCE
    middle = statistics.median(quiet)
    spread = statistics.median(abs(t - middle) for t in quiet) / middle
    return min(MAX_TOLERANCE, max(TOLERANCE, 3 * spread))


def sample_sizes(
    warm: WarmTrial, dev: Device, warnings: list[str], reporter: Reporter
) -> Sampled:
    """Sizes chosen as they are measured (``sample_plan.sample_curve``): at each, the peak
    (``WarmTrial.peak_at``) and then the time in a block of its own (``WarmTrial.time_at``)."""
    first = warm.user
    user = first.batch_size
    timings: dict[int, SampleTiming] = {}
    policy = CUDA_SAMPLING if dev.kind == "cuda" else CPU_SAMPLING
    precision = policy.precision

    def make_room(n: int) -> None:
        """Where the RAM is tight, the heap's free pages go back before a step at n (its
        tensors about the user's × n / user): in a 600 MiB container, 11 timed again after 4
        rose to 510–594 MiB, 441 trimmed."""
        dev.make_room(first.peak_bytes * max(1.0, n / user))

    def measure(n: int) -> tuple[int, float]:
        known = {user: first.iteration_ms,
                 **{m: t.ratio * first.iteration_ms for m, t in timings.items()}}
        untimed_ms = peak_window_ms(first.iteration_ms, expected_ms(known, n))
        reporter.stage(f"measuring batch size {n}", 2 + 3 * n / user,
                       timed=not covers(untimed_ms))
        make_room(n)
        try:
            # the widget scales by the two largest: a size above every one measured, not a
            # half between them (a tracked peak costs about one of the user's iterations)
            peak = warm.peak_at(n, categorize=n > max([user, *timings]))
            timings[n] = warm.time_at(n, precision)
        except ProviderError as exc:  # their batch ran: the profile stands, the size does not
            why = str(exc).rstrip(".")
        else:
            return peak, timings[n].ratio * first.iteration_ms
        raise SizeFailed(Refusal(n, why))  # outside the handler: no hold on its tensors

    def retime(n: int, expected_ms: float | None) -> float:
        reporter.stage(f"timing batch size {n} again", 1 + 3 * n / user, timed=True)
        make_room(n)
        if n == user:  # beside the samples; the headline stays (``sample_plan._rebase``)
            return warm.time_users_batch(precision).ratio * first.iteration_ms
        expected = None if expected_ms is None else expected_ms / first.iteration_ms
        timings[n] = warm.time_again(timings[n], precision, expected)
        return timings[n].ratio * first.iteration_ms

    tolerance = tolerance_of(first)
    found = sample_curve(
        measure, user, first.peak_bytes, first.iteration_ms, dev.sampling_capacity_bytes(),
        oom_errors=dev.oom_types, tolerance=tolerance,
        budget_ms=sampling_budget_ms(policy, first.iteration_ms,
                                     1000.0 * reporter.profile_s(), dev.kind == "cpu"),
        timed_ms=lambda ms: precision.quiet_ms(ms, dev.min_chunk, dev.kind == "cpu"),
        retime=retime, reach=policy.reach, between=policy.between)
    # each size over the headline as the plan holds it (scaled where it rebased)
    chosen = [replace(timings[n], ratio=found.times[n] / first.iteration_ms)
              for n in found.peaks if n != user]
    if found.base != 1.0:
        warnings.append(pace_warning(user, first.iteration_ms, found.base))
    busy = [t.batch_size for t in chosen if not t.converged and t.timing.waited_count]
    if busy:
        warnings.append(
            f"batch size {', '.join(map(str, busy))} timed on a busy machine (other programs "
            "took the CPUs; in a notebook, its server and browser count too): predictions may "
            "be off; re-profile when it is quieter"
        )
    phases = {**warm.phases_at, user: warm.user_phases} if warm.user_phases else {}
    return Sampled(found.peaks, warm.categories_at, chosen, found.reason, tolerance, phases,
                   found.refused, found.between)


def pace_warning(user: int, headline_ms: float, base: float) -> str:
    """What ``sample_plan._rebase`` did, in the user's numbers."""
    return (f"the machine's pace changed during the profile: batch size {user}, timed again "
            f"beside the other sizes, took {format_ms(base * headline_ms)} against the "
            f"headline's {format_ms(headline_ms)}; their times are scaled to the headline's")


def sampling_budget_ms(policy: SamplingPolicy, iteration_ms: float, so_far_ms: float,
                       warms: bool = False) -> float:
    """What the samples may spend: the policy's iterations of the user's, lifted towards
    ``SAMPLING_FLOOR_MS`` (a few sizes of sub-millisecond iterations need that much to be
    timed at all; plus ``FLOOR_SIZES`` warm-ups where a CPU's step is short, ``warms``) no
    further than the cost bar over the profile, ``so_far_ms`` (every other level has run
    before the samples); without such a count, that bar alone.

    The floor used to lift the count regardless: a CPU's CNN of 6.7 ms iterations at batch 8,
    0.11 s into its profile, sampled for 0.17 s (1.53× the profile, BENCHMARKS.md, session
    30), where 13 of its iterations are 87 ms."""
    bar_ms = COST_BAR * so_far_ms
    if policy.budget is None:
        return bar_ms
    floor = SAMPLING_FLOOR_MS + FLOOR_SIZES * policy.precision.warm_up_ms(iteration_ms, warms)
    return max(iteration_ms * policy.budget, min(floor, bar_ms))


def untracked_peaks(warm: WarmTrial, sampled: Sampled, reporter: Reporter) -> None:
    """Measure the peaks above the user's batch again without the peak tracker, where a
    dispatch mode changes what this model allocates.

    Those sizes were measured under the tracker (for what was alive at their peaks). For most
    models a dispatch mode changes nothing (the examples: exact to the byte); a GRU over a
    packed sequence copies its weights at every time step under any mode, and its samples came
    out 8–13 % above a plain iteration's peak; a step whose backward adds two gradients of one
    activation kept one more copy under a mode (an Adam step with two heads, +15 % at 2×). The
    memory run tells: its step peak and its phases' at the user's batch, under its modes,
    against the plain ones (``_modes_changed``)."""
    user = warm.user
    if not _modes_changed(warm, int(OTHER_ROUNDING * user.peak_bytes)):
        return
    for n in [n for n in sampled.peaks if n > user.batch_size]:
        reporter.stage(f"measuring memory at batch size {n} again", 2 * n / user.batch_size)
        try:
            sampled.peaks[n] = warm.peak_at(n, categorize=False)
        except warm.device.oom_types:
            continue
        if n in warm.phases_at and sampled.phases:
            sampled.phases[n] = warm.phases_at[n]
        if n in sampled.categories:
            sampled.categories[n] = sampled.categories[n].with_peak(sampled.peaks[n])
    warm.last_inputs = None


def _modes_changed(warm: WarmTrial, tolerance: int) -> bool:
    """Whether the memory run's dispatch modes changed what the user's step allocates at its
    peak or at a phase's, by more than ``tolerance`` bytes: a phase below the peak at the
    user's batch may hold it at larger ones (an Adam step whose two heads' gradients a mode sums
    anew peaked in its update at 32, the same bytes tracked or not, and in backward at 64, where
    tracked it read +30,208 B, 15 %; its backward phase at 32 told).

    Known limitation: a change at no phase's peak here can still be one at a larger size (the
    same step at 16: its samples at 64 and 128 read +15 %). Every residual network's gradient
    sums are allocated anew under a mode (the example CNN's 3 MB in 3 blocks), and its samples
    are exact: measuring every size twice for these would cost a 2× sample 3–4 of the user's
    iterations more."""
    tracked = warm.tracked
    if tracked is None:
        return False
    shift = warm.user.peak_bytes - warm.user_step_peak
    return (abs(tracked.added - warm.user_step_peak) > tolerance
            or any(abs(value + shift - warm.user_phases[phase]) > tolerance
                   for phase, value in tracked.by_phase.items() if phase in warm.user_phases))


def fitted(
    level1: IterationResult, sampled: Sampled, dev: Device, categories: Categories,
    warnings: list[str],
) -> tuple[list[Sample], PerformanceModels]:
    """The samples at the final headline (each its ratio of it), with what was alive at each
    one's peak, and the lines through them; a flat time taken despite its samples' scatter
    (``trust.fit_time``) gets a warning saying how uncertain it is."""
    first = level1.sample()
    first.categories = dict(categories)
    first.peak_by_phase = dict(sampled.phases.get(first.batch_size, {}))
    samples = [first] + [
        Sample(t.batch_size, level1.iteration_ms * t.ratio, sampled.peaks[t.batch_size],
               dict(sampled.categories.get(t.batch_size, {})),
               dict(sampled.phases.get(t.batch_size, {})))
        for t in sampled.timings
    ]
    samples.sort(key=lambda s: s.batch_size)
    # the machine's free RAM is no bound a user means; GPU memory or their budget is. Without
    # one the range ends where "Measure at N" would refuse (never below a sample: the models')
    bound = dev.kind == "cuda" or dev.memory_budget is not None
    capacity = dev.capacity_bytes() if bound else dev.step_capacity_bytes()
    sizes, times = [s.batch_size for s in samples], [s.iteration_ms for s in samples]
    models = PerformanceModels.from_samples(
        sizes,
        times,
        [s.peak_bytes for s in samples],
        capacity,
        sampled.reason,
        memory_bound=bound,
        tolerance=sampled.tolerance,
        peak_phases=[s.peak_by_phase for s in samples],
        fails_at=fails_above(sampled.refused, first.batch_size),
        fails_below=fails_below(sampled.refused, first.batch_size),
    )
    warnings.extend(filter(None, [noise_warning(models, dev.kind, sizes, times),
                                  steep_start_warning(models)]))
    if sampled.reason is None:  # else the reason names the first refusal
        warnings.extend(_refusal_warning(r, first.batch_size, models) for r in sampled.refused)
    warnings.extend(_between_warning(r, sampled.peaks) for r in sampled.between)
    return samples, models


def _refusal_warning(refusal: Refusal, user: int, models: PerformanceModels) -> str:
    """A size the providers raised at, beside predictions from the sizes that ran."""
    if refusal.batch_size < user:
        bottom = models.min_batch_size()
        return f"{refusal}: predictions start at batch size {bottom}"
    top = models.max_batch_size() if models.memory is not None else refusal.batch_size - 1
    return f"{refusal}: predictions stop at batch size {top}"


def _between_warning(refusal: Refusal, ran: dict[int, int]) -> str:
    """A size the providers raised at while sizes on either side ran: the drag's range stays,
    and the user learns that some sizes inside it fail."""
    below = max(n for n in ran if n < refusal.batch_size)
    above = min(n for n in ran if n > refusal.batch_size)
    return f"{refusal}, while {below} and {above} ran: other sizes the drag reaches may fail too"


def noise_warning(models: PerformanceModels, device_kind: str, xs: Sequence[int],
                  ts: Sequence[float]) -> str | None:
    """What a flat time, or a floor and a line (a bend), taken despite its samples' scatter
    (``trust.fit_time``) means for the predictions; None for any other curve, a refused one,
    or samples within what a quiet machine gives. A GPU's flat time is launch-bound (the host
    sets the pace); a CPU launches nothing: its flat time is a fixed cost per step (per-op
    dispatch, or threads that wait for a CPU at every parallel op on a busy machine:
    ``threads.py``)."""
    time = models.time
    if time is None or time.shape not in (FLAT, BEND) or not models.can_manipulate:
        return None
    scatter = spread(time, xs, ts)
    if scatter <= MAX_FLAT_SPREAD:
        return None
    low, high = models.measured_range or (0, 0)
    why = "launch-bound" if device_kind == "cuda" else "a fixed cost per step"
    shape = (f"does not grow from batch size {low} to {high} ({why})" if time.shape == FLAT
             else f"does not grow from batch size {low} to about {time.bend():.0f} ({why}), "
                  "then grows")
    return (f"the iteration time {shape}, but its samples vary by up to {scatter:.0%} around "
            "that curve: predicted times are that uncertain; re-profile when the machine is "
            "quieter")


def steep_start_warning(models: PerformanceModels) -> str | None:
    """What a time curve joined to its smallest sample by a straight piece
    (``trust._steep_start``) means for the predictions; None for any other curve."""
    time = models.time
    if time is None or not time.pieces or models.measured_range is None:
        return None
    low, joint, line = models.measured_range[0], time.lines[0].end, time.lines[-1]
    return (f"below batch size {joint:g} the iteration time falls faster than the line through "
            f"the larger sizes ({format_ms(time(low))} at {low}, where that line says "
            f"{format_ms(line(low))}): predictions there follow a straight piece between them")
