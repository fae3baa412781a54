"""``%skyline`` / ``%%skyline``: parse arguments, find the providers, show a live profile.

Glue only: the profiler knows nothing of IPython, the widget nothing of torch. The magic resolves
the providers in the user's namespace (``entry``'s rules, shared with the command line), finds
the cell that defines the input provider (through the ``cells`` registry, fed by a
``pre_run_cell`` hook and, for cells that ran before the extension was loaded, by IPython's input
history; a ``%%skyline`` body is run by ``cellbody``), and hands both to a ``LiveProfile``, with
``cells.lookup`` for the profiler to tell notebook cells apart. A failed profile reaches the
notebook as ``failures`` words it: a banner, then the user's own frames.

``-o FILE`` exports the profile already shown when its providers and options are unchanged
(``fingerprint``), else profiles first (``--reprofile`` always does); either way it prints what it
wrote and its size. A cell that runs ``%skyline`` again closes the widget its previous run made:
its output is gone, and a notebook saved with widget state would otherwise keep every one.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from skyline_nb import cells, entry, failures, fingerprint, inputs
from skyline_nb.cellbody import run_body, running_cell_id
from skyline_nb.live import LiveProfile, SourceCell
from skyline_nb.report import Report
from skyline_nb.request import ProfileRequest


@magics_class
class SkylineMagics(Magics):
    """The magics plus the live profiles they created (for watching source cells)."""

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.live: list[LiveProfile] = []
        self.by_cell: dict[str, LiveProfile] = {}  # source cell id -> its latest live profile
        self.by_output: dict[str, tuple[int, list[LiveProfile]]] = {}  # cell id -> its run's
        self.latest = fingerprint.Latest()  # the latest profile any widget showed

    @magic_arguments()
    @argument("-m", "--model", metavar="NAME", help="the model provider function")
    @argument("-i", "--input", metavar="NAME", help="the input provider function")
    @argument("-t", "--iteration", metavar="NAME", help="the iteration provider function")
    @argument("--batch-size-var", metavar="NAME",
              help="a module-level int the input provider reads as its batch size (one named "
                   "batch_size is read without it)")
    @argument("--batch-size", type=entry.batch_size_arg, metavar="N",
              help="profile at this batch size")
    @argument("--device", choices=("cuda", "cpu"), help="default: cuda when available")
    @argument("--no-predict", action="store_true",
              help="skip sampling other batch sizes (no drag predictions)")
    @argument("--memory-budget", metavar="SIZE",
              help="the memory capacity to predict against, e.g. 8GiB (CPU: default free RAM)")
    @argument("--no-watch", action="store_true",
              help="do not re-profile when the source cell runs again")
    @argument("-o", "--output", metavar="PATH",
              help="export, replacing the file, by suffix: .sqlite (time), .memory.sqlite, .json "
                   "(the report), .trace.json (a Chrome trace for Perfetto) or .html; the profile "
                   "already shown when its providers are unchanged")
    @argument("--reprofile", action="store_true",
              help="with -o: profile again even when the profile shown is up to date")
    @no_var_expand
    @line_cell_magic
    def skyline(self, line: str, cell: str | None = None) -> None:
        """Profile one training iteration of the providers and show the Skyline widget.

        Line magic: profiles providers already defined. Cell magic: runs the cell first, then
        profiles what it defined; dragging the widget's bars rewrites the cell's batch size.
        """
        args = parse_argstring(self.skyline, line)
        request = _request(self.shell.user_ns, args)
        if args.batch_size_var:  # before the widget shows: a usage error, not an empty widget
            _usage(entry.int_variable, self.shell.user_ns, args.batch_size_var)
        output = Path(args.output) if args.output else None
        if output is not None:
            _usage(entry.export_kind, output)  # refuse a bad name before minutes of profiling
            _usage(entry.check_output_place, output)
            if cell is None and not args.reprofile:
                _usage(request.read_variable)
                shown = self.latest.current(request, args.batch_size)
                if shown is not None:
                    return _write(shown, output)
        source_cell = run_body(self.shell, cell, self.by_cell) if cell is not None else None
        if cell is not None and source_cell is None:
            # IPython already showed the body's error; fail the cell too, so that Run All
            # stops here, with one line rather than a second traceback.
            raise UsageError("%%skyline: the cell's code failed (see above); nothing was profiled")
        _, input_p, _ = request.resolve()  # fail early, before any profiling
        _usage(request.read_variable)
        source_cell = source_cell or _cell_of(input_p)
        from skyline_nb.profiler.session import profile

        profile_fn = functools.partial(profile, cells=cells.lookup)
        live = LiveProfile(request, source_cell,
                           failures.for_user(self.latest.remembering(request, profile_fn)),
                           on_joined=self.latest.joined)
        self._replace_output(live)
        live.show()
        report = live.run(args.batch_size)
        if source_cell is not None and source_cell.cell_id:
            self.by_cell[source_cell.cell_id] = live
        if not args.no_watch:
            self.live = [p for p in self.live if p.widget.comm is not None] + [live]
        if output is not None:
            _write(report, output)

    def _replace_output(self, live: LiveProfile) -> None:
        """Close the widget that an earlier run of the running cell made (and stop serving it):
        that run's outputs were cleared. Runs are told apart by their execution count."""
        cell_id, run = running_cell_id(self.shell), self.shell.execution_count
        if not cell_id:
            return
        previous_run, lives = self.by_output.get(cell_id, (run, []))
        if previous_run != run:
            for old in lives:
                old.widget.close()
            lives = []
        self.by_output[cell_id] = (run, [*lives, live])

    def on_post_run_cell(self, result: Any) -> None:
        """Re-profile live widgets whose source cell just ran (unless --no-watch)."""
        info = getattr(result, "info", None)
        if info is None or info.raw_cell.lstrip().startswith("%%skyline"):
            return
        self.live = [p for p in self.live if p.widget.comm is not None]
        cell_id = getattr(info, "cell_id", None)
        for live in self.live:
            if result.success:
                live.on_cell_ran(cell_id, info.raw_cell)
            else:
                live.on_cell_failed(cell_id, result.error_before_exec or result.error_in_exec)


def _usage(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """``function(...)``, with ``entry.UsageError`` raised as IPython's ``UsageError``."""
    try:
        return function(*args, **kwargs)
    except entry.UsageError as exc:
        raise UsageError(str(exc)) from None


def _request(namespace: dict[str, Any], args: Any) -> ProfileRequest:
    """What to profile: the providers, found by name (``request.ProfileRequest.resolve``: each
    widget keeps its own), and the options."""
    names = {"model": args.model, "input": args.input, "iteration": args.iteration}
    budget = args.memory_budget
    return ProfileRequest(
        find=lambda: _usage(entry.find_providers, namespace, names, where="the notebook",
                               hint="; define each, or name yours with -m, -i, -t NAME"),
        device=_usage(entry.check_device, args.device),
        predict=not args.no_predict,
        memory_budget=_usage(entry.parse_size, budget) if budget else None,
        batch_size_var=args.batch_size_var,
        namespace=namespace, input_name=args.input,
    )


def _write(report: Report, output: Path) -> None:
    print(entry.wrote(entry.export(report, output, overwrite=True)))


def _cell_of(fn: Any) -> SourceCell | None:
    """The registered cell that defines ``fn`` (``inputs.code_of``), if any."""
    code = inputs.code_of(fn)
    found = cells.lookup(code.co_filename) if code is not None else None
    if found is None:
        return None
    return SourceCell(found.cell_id, found.display_source(), found.code_name)


def load(ip: Any) -> None:
    """Register the magics and the cell registry hooks once per shell."""
    if getattr(ip, "_skyline_nb_magics", None) is not None:
        return
    magics = SkylineMagics(ip)
    ip.register_magics(magics)
    cells.register_history(ip)  # cells that ran before `%load_ext` (the hook never saw them)
    ip.events.register("pre_run_cell", cells.make_pre_run_cell_hook(ip))
    ip.events.register("post_run_cell", magics.on_post_run_cell)
    ip._skyline_nb_magics = magics


def last_report() -> Report | None:
    """The latest Report a ``%skyline`` widget showed in this kernel (re-profiles too), or None."""
    from IPython import get_ipython

    magics = getattr(get_ipython(), "_skyline_nb_magics", None)
    return magics.latest.report if magics is not None else None


__all__ = ["SkylineMagics", "last_report", "load"]
