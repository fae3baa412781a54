"""``%skyline`` / ``%%skyline``: parse arguments, find the providers, show a live profile.

Glue only: the profiler knows nothing of IPython, the widget nothing of torch. The magic resolves
names in the user's namespace, finds the cell that defines the input provider (through the
``cells`` registry, fed by a ``pre_run_cell`` hook and, for cells that ran before the extension
was loaded, by IPython's input history), and hands both to a ``LiveProfile``.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path
from typing import Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class, no_var_expand
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from skyline_nb import cells, cli
from skyline_nb import source as source_edit
from skyline_nb.live import LiveProfile, ProfileRequest, SourceCell
from skyline_nb.report import Report

PREFIXES = ("skyline", "deepview")
ROLES = {"model": "model_provider", "input": "input_provider", "iteration": "iteration_provider"}


def parse_size(text: str) -> int:
    """'8GiB' -> 8·2**30, '512MB' -> 512·10**6 (the CLI's rules), as a UsageError when bad."""
    try:
        return cli.parse_size(text)
    except argparse.ArgumentTypeError as exc:
        raise UsageError(f"--memory-budget: {exc}") from None


@magics_class
class SkylineMagics(Magics):
    """The magics plus the live profiles they created (for watching source cells)."""

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.live: list[LiveProfile] = []
        self.by_cell: dict[str, LiveProfile] = {}
        self.last_report: Report | None = None

    @magic_arguments()
    @argument("-m", "--model", metavar="NAME", help="the model provider function")
    @argument("-i", "--input", metavar="NAME", help="the input provider function")
    @argument("-t", "--iteration", metavar="NAME", help="the iteration provider function")
    @argument("--batch-size-var", metavar="NAME",
              help="a module-level int the input provider reads as its batch size")
    @argument("--batch-size", type=int, metavar="N", help="profile at this batch size")
    @argument("--device", choices=("cuda", "cpu"), help="default: cuda when available")
    @argument("--no-predict", action="store_true",
              help="skip sampling other batch sizes (no drag predictions)")
    @argument("--memory-budget", metavar="SIZE",
              help="the memory capacity to predict against, e.g. 8GiB (CPU: default free RAM)")
    @argument("--no-watch", action="store_true",
              help="do not re-profile when the source cell runs again")
    @argument("-o", "--output", metavar="PATH",
              help="also export: .sqlite (time), .memory.sqlite, .json or .html, by suffix")
    @no_var_expand
    @line_cell_magic
    def skyline(self, line: str, cell: str | None = None) -> None:
        """Profile one training iteration of the providers and show the Skyline widget.

        Line magic: profiles providers already defined. Cell magic: runs the cell first, then
        profiles what it defined; dragging the widget's bars rewrites the cell's batch size.
        """
        args = parse_argstring(self.skyline, line)
        namespace = self.shell.user_ns
        source_cell = None
        if cell is not None:
            source_cell = self._run_cell_body(cell)
            if source_cell is None:
                # IPython already showed the body's error; fail the cell too, so that Run All
                # stops here, with one line rather than a second traceback.
                raise UsageError("%%skyline: the cell's code failed (see above); nothing was "
                                 "profiled")
        resolve = _resolver(namespace, args)
        try:
            _, input_p, _ = resolve()  # fail early, before any profiling
        except UsageError as exc:
            _show_error(f"Nothing to profile: {exc}")
            raise
        if source_cell is None:
            source_cell = _cell_of(input_p)
        request = ProfileRequest(
            resolve=resolve,
            device=args.device,
            predict=not args.no_predict,
            memory_budget=parse_size(args.memory_budget) if args.memory_budget else None,
            batch_size_var=args.batch_size_var,
            namespace=namespace,
        )
        from skyline_nb.profiler.session import profile

        live = LiveProfile(request, source_cell, profile)
        live.show()
        report = live.run(args.batch_size)
        self.last_report = report
        if source_cell is not None and source_cell.cell_id:
            self.by_cell[source_cell.cell_id] = live
        if not args.no_watch:
            self.live = [p for p in self.live if p.widget.comm is not None] + [live]
        if args.output:
            export(report, Path(args.output))

    def _run_cell_body(self, body: str) -> SourceCell | None:
        """Run a ``%%skyline`` cell's body so its functions map to the cell's own lines.

        If the cell's widget holds a dragged batch size that no front-end path could write
        into the cell (fallback (c) of DESIGN), apply it now: this is the one place where
        ``set_next_input(replace=True)`` rewrites the right cell, the one being run.
        """
        entries = cells.entries()
        outer = entries[-1] if entries else None
        full = outer.cell_source if outer is not None and outer.cell_source else None
        if full is None or not full.lstrip().startswith("%%skyline"):
            full = "%%skyline\n" + body
        cell_id = outer.cell_id if outer is not None else None
        cell_id = cell_id or _current_cell_id(self.shell)
        prefix = _magic_prefix(full, body)
        full = self._apply_pending_edit(cell_id, full, len(prefix))
        body = _with_newline(full)[len(prefix):]
        result = self.shell.run_cell(body, store_history=False)
        if not result.success:
            return None
        transformed = self.shell.transform_cell(body)
        entry = next((e for e in reversed(cells.entries()) if e.source == transformed), None)
        if entry is None:
            return None
        magic_lines = prefix.count("\n")  # lines up to and including the %%skyline line
        first = magic_lines + 1 + cells.leading_blank_lines(body) - cells.leading_blank_lines(
            transformed)
        cells.register(entry.code_name, cell_id, transformed, first_line=first, cell_source=full)
        return SourceCell(cell_id, full, entry.code_name)

    def _apply_pending_edit(self, cell_id: str | None, full: str, body_start: int) -> str:
        """The cell text to run: ``full``, or with a pending dragged batch size written in."""
        previous = self.by_cell.get(cell_id) if cell_id else None
        wanted = previous.widget.selected_batch_size if previous is not None else None
        report = previous.report if previous is not None else None
        if wanted is None or report is None:
            return full
        variable = previous.request.batch_size_var
        located = source_edit.locate_for_edit(full, wanted, variable=variable)
        # Only when the literal still holds the profiled value: a hand edit wins over a drag.
        profiled = report.batch_size
        if (not located["ok"] or located["value"] != profiled or wanted == profiled
                or located["start"] < body_start):
            return full
        new_full = full[: located["start"]] + located["replacement"] + full[located["end"]:]
        self.shell.set_next_input(new_full, replace=True)
        return new_full

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


def _show_error(message: str) -> None:
    """A widget that only says what went wrong (no kernel side serves it)."""
    from IPython.display import display

    from skyline_nb.widget import SkylineWidget

    display(SkylineWidget(error=message))


def _with_newline(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"


def _magic_prefix(full: str, body: str) -> str:
    """The cell text up to and including the ``%%skyline`` line.

    IPython hands the magic a body that always ends with a newline, while the cell as typed
    (``full``) usually does not: compare with the newline added, or every line is off by one.
    """
    whole = _with_newline(full)
    if body and whole.endswith(body):
        return whole[: len(whole) - len(body)]
    first, _, _ = whole.partition("\n")
    return first + "\n"


def _resolver(namespace: dict[str, Any], args: Any) -> Callable[[], tuple[Any, Any, Any]]:
    explicit = {"model": args.model, "input": args.input, "iteration": args.iteration}

    def resolve() -> tuple[Any, Any, Any]:
        found = []
        for role, suffix in ROLES.items():
            names = [explicit[role]] if explicit[role] else [f"{p}_{suffix}" for p in PREFIXES]
            fn = next((namespace[n] for n in names if n in namespace), None)
            if fn is None:
                raise UsageError(
                    f"no {role} provider: define `{names[0]}`"
                    + (f" (or `{names[1]}`)" if len(names) > 1 else "")
                    + f" or name one with -{role[0] if role != 'iteration' else 't'} NAME"
                )
            if not callable(fn):
                raise UsageError(f"`{names[0]}` is a {type(fn).__name__}, not a function")
            found.append(fn)
        return found[0], found[1], found[2]

    return resolve


def _cell_of(fn: Any) -> SourceCell | None:
    code = getattr(fn, "__code__", None)
    entry = cells.lookup(code.co_filename) if code is not None else None
    if entry is None:
        return None
    return SourceCell(entry.cell_id, entry.display_source(), entry.code_name)


def _current_cell_id(shell: Any) -> str | None:
    kernel = getattr(shell, "kernel", None)
    try:
        return kernel.get_parent()["metadata"].get("cellId") if kernel is not None else None
    except (AttributeError, KeyError, TypeError):
        return None


def export(report: Report, path: Path) -> Path:
    """Write ``report`` by suffix: .json, .html, .sqlite (time) or .memory.sqlite."""
    name = path.name.lower()
    if name.endswith(".memory.sqlite"):
        return report.save_sqlite(path, kind="memory")
    if name.endswith(".sqlite"):
        return report.save_sqlite(path, kind="time")
    if name.endswith(".json"):
        report.to_json(path)
        return path
    if name.endswith(".html"):
        return report.to_html(path)
    raise UsageError(f"-o {path}: use a .sqlite, .memory.sqlite, .json or .html file name")


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
    """The Report of the latest ``%skyline`` run in this kernel, or None."""
    from IPython import get_ipython

    magics = getattr(get_ipython(), "_skyline_nb_magics", None)
    return magics.last_report if magics is not None else None


__all__ = ["SkylineMagics", "export", "last_report", "load", "parse_size"]
