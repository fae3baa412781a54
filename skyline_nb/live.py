"""A live profile: one widget bound to the user's providers and the cell that defines them.

The magic creates one ``LiveProfile`` per ``%skyline`` run. It owns the widget's kernel side:
profiling (what it does in the ``status`` trait, each stage in ``progress``, errors in ``error``),
serving the front end, and re-profiling when the source cell runs again. Only this module and
``magic.py`` join the profiler to the widget; neither knows how the other works inside.

The kernel is busy while it profiles, yet trait changes reach the front end at once (they are
sent, not read), so the progress shows live. Stopping a run is a kernel interrupt (the widget's
Cancel asks the notebook for one): the KeyboardInterrupt leaves the user's state as it was (the
profiler's isolation) and the widget says "Cancelled" (``progress`` ``{"cancelled": True}``).
In an IPython without a kernel (a terminal) there is no widget to see: the progress is a text
line on stdout instead (``textprogress``).

The front end reaches the kernel two ways, named in ``js/shared/protocol.js``:

* requests that want an answer are anywidget commands (``experimental.invoke`` in the front end,
  ``@anywidget.experimental.command`` here, which pairs each answer with its request): ``ping``
  (does a kernel object serve this widget?) and ``locate`` (the ``LiteralEdit`` that sets the
  batch size in the cell's text as it is now; the kernel is the one authority on where the
  literal is and what replaces it);
* ``{"kind": ...}`` messages that only start work, whose results come back in traits:
  ``reprofile`` and ``measure``; the work runs on the kernel's main thread, where the user's
  cells run and an interrupt lands (``mainthread``), whatever thread delivered the message.
"""

from __future__ import annotations

import contextlib
import sys
import time
import traceback
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import traitlets
from anywidget.experimental import command

from skyline_nb import cells
from skyline_nb import source as source_edit
from skyline_nb.entry import int_variable
from skyline_nb.export.snapshot import snapshot_html
from skyline_nb.inputs import NOT_IN_A_CELL, outside_cells, variable_input_provider
from skyline_nb.mainthread import on_main_thread
from skyline_nb.measurement import other_parameters, parameters_of
from skyline_nb.profiler.progress import Progress
from skyline_nb.quiet_cores import in_kernel, wait_for_front_end
from skyline_nb.report import BatchSizeSource, Report
from skyline_nb.request import ProfileRequest, Providers
from skyline_nb.textprogress import TextProgress
from skyline_nb.widget import SkylineWidget


@dataclass
class SourceCell:
    """The cell holding the batch-size literal: its id and its text as last executed."""

    cell_id: str | None
    code: str
    file: str | None = None


class LiveWidget(SkylineWidget):
    """A ``SkylineWidget`` that a ``LiveProfile`` serves: it answers the front end's commands.

    ``progress``: while a profile runs, the stage that started last, ``{stage, done (0..1),
    elapsed_s, remaining_s (None until estimated), notice}``; after a run stopped by an interrupt,
    ``{cancelled: True, stage, elapsed_s}``; ``{}`` otherwise.
    """

    progress = traitlets.Dict().tag(sync=True)

    def __init__(self, profile: LiveProfile) -> None:
        super().__init__(live=True)
        self._profile = profile

    @command
    def ping(self, _msg: Any, _buffers: list[bytes]) -> tuple[dict[str, Any], list[bytes]]:
        """Say a kernel object serves this widget (a widget restored from saved state has none)."""
        return {"ok": True}, []

    @command
    def locate(self, msg: Any, _buffers: list[bytes]) -> tuple[dict[str, Any], list[bytes]]:
        """The edit that sets the batch size in the cell's current text (``locate_edit``)."""
        return self._profile.locate_edit(msg), []


class LiveProfile:
    """The kernel side of one widget: profile, then serve its messages until it is closed."""

    def __init__(self, request: ProfileRequest, cell: SourceCell | None,
                 profile_fn: Callable[..., Report],
                 on_joined: Callable[[Report, Report], None] | None = None) -> None:
        self.request = request
        self._on_joined = on_joined  # told (old, new) when a measurement joins the report
        self.cell = cell
        self._profile_fn = profile_fn
        self.report: Report | None = None
        self.widget = LiveWidget(self)
        self._handlers = {"reprofile": self._reprofile, "measure": self._measure}
        self.widget.on_msg(self._on_msg)
        self.widget.observe(self._on_edit_target, names=["edit_target"])
        self._handle: Any = None
        self._snapshot: Any = None

    def show(self) -> None:
        """Display the widget now (progress shows while profiling), then its static snapshot.

        The snapshot is a second output, ``text/html`` only: viewers without the widget (GitHub,
        nbconvert, a notebook reopened with no widget state) show it, and the widget's CSS hides
        it wherever the widget itself renders. Both go through display handles so the saved
        outputs follow the latest report.
        """
        from IPython.display import display

        self._handle = display(self.widget, display_id=True)
        self._snapshot = display(self._snapshot_bundle(), raw=True, display_id=True)

    def _snapshot_bundle(self) -> dict[str, str]:
        return {"text/html": snapshot_html(self.widget.report, self.widget.error)}

    def _refresh_outputs(self) -> None:
        """Re-send both displays so what the notebook saves matches the widget now."""
        if self._handle is not None:
            self._handle.update(self.widget)
            self._snapshot.update(self._snapshot_bundle(), raw=True)

    # ---- profiling ----------------------------------------------------------------------
    def _providers(self) -> Providers:
        """The user's providers as every measurement calls them: with ``--batch-size-var``,
        an input provider that takes ``batch_size`` (see ``variable_input_provider``)."""
        model_p, input_p, iteration_p = self.request.resolve()
        if self.request.batch_size_var:
            input_p = variable_input_provider(
                input_p, self.request.namespace, self.request.batch_size_var)
        return model_p, input_p, iteration_p

    def run(self, batch_size: int | None = None, alike: Report | None = None) -> Report:
        """Profile (raising on failure, after showing the error in the widget). ``alike``: the
        profile this one is of the same model as (the widget's Re-profile): where its
        parameters differ, the report's notes say so."""
        model_p, input_p, iteration_p = self._providers()
        if batch_size is None and self.request.batch_size_var:
            batch_size = int_variable(self.request.namespace, self.request.batch_size_var)
        self.widget.error = ""
        status = "Profiling one training iteration" + (
            f" at batch size {batch_size}…" if batch_size else "…")
        try:
            with self._working(status), _text_line() as text:
                report = self._profile_fn(
                    model_p, input_p, iteration_p, batch_size=batch_size,
                    device=self.request.device, predict=self.request.predict,
                    memory_budget=self.request.memory_budget,
                    project_root=self.request.project_root, progress=self._show_progress(text),
                )
                report.source = self._locate(report.batch_size)
                if alike is not None:
                    report.warnings.extend(_changed_model(report, alike))
                self.report = report
                self.widget.selected_batch_size = self.widget.written_batch_size = None
                self.widget.measurement = {}  # taken against the report this one replaces
                self.widget.report = report.to_dict()
                self.widget.edit_target = _edit_target(report.source)
        except BaseException as exc:
            if not isinstance(exc, KeyboardInterrupt):  # an interrupt is "Cancelled", no error
                self.widget.error = _readable(exc)
            self._refresh_outputs()
            raise
        self._refresh_outputs()
        return report

    @contextlib.contextmanager
    def _working(self, status: str) -> Iterator[None]:
        """The kernel works for the widget: ``status`` shows meanwhile, and an interrupt leaves
        "cancelled" in ``progress``, with the stage it stopped in and the time it ran."""
        self.widget.progress = {}
        self.widget.status = status
        started, after = time.perf_counter(), {}
        try:
            yield
        except KeyboardInterrupt:
            stage = self.widget.progress.get("stage") or status.rstrip("…").lower()
            after = {"cancelled": True, "stage": stage,
                     "elapsed_s": time.perf_counter() - started}
            raise
        finally:
            self.widget.status = ""
            self.widget.progress = after

    def _show_progress(self, text: TextProgress | None) -> Callable[[Progress], None]:
        """The profiler's ``progress=`` callback: the widget's trait, and the text line if any.
        After the first stage the front end draws the widget and its progress panel, then
        nothing is timed until that is done (``quiet_cores``)."""
        first = True
        def show(progress: Progress) -> None:
            nonlocal first
            if progress.timed:  # a message now lands in timed iterations (``Progress.timed``)
                return
            self.widget.progress = {"stage": progress.stage, "done": progress.done,
                                    "elapsed_s": progress.elapsed_s, "notice": progress.notice,
                                    "remaining_s": progress.remaining_s}
            if text is not None:
                text(progress)
            if first:
                first = False
                wait_for_front_end()

        return show

    def _locate(self, batch_size: int) -> BatchSizeSource:
        if self.cell is None:
            try:
                reason = outside_cells(self.request.resolve()[1])
            except Exception:  # the names are gone: what is known without them
                reason = NOT_IN_A_CELL
            return BatchSizeSource(code="", editable=False, reason=reason)
        try:
            loc = source_edit.find_batch_size_literal(
                self.cell.code, provider_name=self.request.input_provider_name(),
                variable=self.request.batch_size_var)
        except source_edit.SourceEditRefused as exc:
            return BatchSizeSource(code=self.cell.code, editable=False, reason=str(exc),
                                   cell_id=self.cell.cell_id, file=self.cell.file)
        reason = None
        if loc.value != batch_size:
            reason = f"profiled at batch size {batch_size}, but the cell's literal is {loc.value}"
        return BatchSizeSource(
            code=self.cell.code, editable=True, kind=loc.target, start=loc.start, end=loc.end,
            value=loc.value, cell_id=self.cell.cell_id, file=self.cell.file, reason=reason,
            start_utf16=loc.start_utf16, end_utf16=loc.end_utf16, text=loc.text,
        )

    def _on_edit_target(self, change: dict[str, Any]) -> None:
        """Adopt the cell id the front end found for a cell that ran before ``%load_ext``.

        Such a cell comes from IPython's history without an id; the front end finds it by its
        exact text and writes the id into ``edit_target``. Knowing it, the next edit goes to
        that cell even after the first one changed its text, and running the cell again
        re-profiles this widget. An id the kernel already knows is never replaced.
        """
        cell_id = (change["new"] or {}).get("cell_id")
        if not isinstance(cell_id, str) or not cell_id:
            return
        if self.cell is None or self.cell.cell_id is not None:
            return
        self.cell = SourceCell(cell_id, self.cell.code, self.cell.file)
        if self.cell.file:
            cells.name_cell(self.cell.file, cell_id)
        if self.report is not None and self.report.source is not None:
            self.report.source.cell_id = cell_id

    # ---- front-end messages -------------------------------------------------------------
    def _on_msg(self, _widget: Any, content: dict[str, Any], _buffers: Any) -> None:
        """Start the work a ``{"kind": ...}`` message asks for, on the kernel's main thread
        (``mainthread``); other messages (anywidget's own commands among them) are not for this
        handler."""
        handler = self._handlers.get(content.get("kind")) if isinstance(content, dict) else None
        if handler is not None:
            on_main_thread(lambda: self._work(handler, content))

    def _work(self, handler: Callable[[dict[str, Any]], None], content: dict[str, Any]) -> None:
        try:
            handler(content)
        except KeyboardInterrupt:  # Cancel: the widget says so; the kernel goes on serving
            return
        except Exception as exc:  # shown in the widget; the comm must survive
            self.widget.error = _readable(exc)

    def locate_edit(self, msg: Any) -> dict[str, Any]:
        """``source.locate_for_edit`` of ``msg["code"]`` (the cell's text now: the user may have
        typed since it ran) and ``msg["batch_size"]``: ``{"ok": True, "edit": {...}}`` with the
        edit in UTF-16 code units, or ``{"ok": False, "reason": ...}`` for a refused edit."""
        code = msg.get("code") if isinstance(msg, dict) else None
        size = msg.get("batch_size") if isinstance(msg, dict) else None
        if not isinstance(code, str) or isinstance(size, bool) or not isinstance(size, int):
            return {"ok": False, "reason": "the request needs the cell's text and a batch size"}
        return source_edit.locate_for_edit(code, size,
                                           provider_name=self.request.input_provider_name(),
                                           variable=self.request.batch_size_var)

    def _reprofile(self, content: dict[str, Any]) -> None:
        size = content.get("batch_size")
        self.run(int(size) if size else (self.report.batch_size if self.report else None),
                 alike=self.report)

    def _measure(self, content: dict[str, Any]) -> None:
        """Measure at the batch size asked; it joins the report's curve where it can
        (``measurement.measured``), and the saved outputs follow."""
        from skyline_nb.measurement import WouldOutgrowMemory, measured, outgrows
        from skyline_nb.profiler.prepare import measure_iteration

        size = int(content["batch_size"])
        self.widget.error = ""  # an earlier measurement's refusal or failure no longer holds
        refusal = outgrows(self.report, size)
        if refusal is not None:
            raise WouldOutgrowMemory(refusal)
        model_p, input_p, iteration_p = self._providers()
        with self._working(f"Measuring at batch size {size}…"):
            wait_for_front_end()
            result = measure_iteration(
                model_p, input_p, iteration_p, size, self.request.device, cells=cells.lookup,
                memory_budget=self.request.memory_budget, project_root=self.request.project_root)
        report, measurement = measured(self.report, result)
        joined = report is not self.report
        if joined:  # first: a measurement held when a report arrives is the old report's
            if self._on_joined is not None:
                self._on_joined(self.report, report)
            self.report, self.widget.report = report, report.to_dict()
        self.widget.measurement = measurement
        if joined:
            self._refresh_outputs()

    # ---- watching the source cell -------------------------------------------------------
    def on_cell_ran(self, cell_id: str | None, code: str) -> bool:
        """Called after any cell ran successfully; re-profile when it is our source cell."""
        if self.cell is None or cell_id is None or cell_id != self.cell.cell_id:
            return False
        self.cell = SourceCell(cell_id, code, self.cell.file)
        self.request.rebind()
        try:
            self.run()
        except (Exception, KeyboardInterrupt):
            return True  # the widget shows the error or "Cancelled"; the user's cell succeeded
        return True

    def on_cell_failed(self, cell_id: str | None, exc: BaseException | None) -> None:
        """Our source cell raised (or did not parse): say so above the last good profile."""
        if self.cell is None or cell_id is None or cell_id != self.cell.cell_id:
            return
        what = _readable(exc) if exc is not None else "it raised"
        self.widget.error = (f"The source cell did not run ({what.splitlines()[0]}); the profile "
                             "below is from its last successful run.")


def _changed_model(report: Report, before: Report) -> list[str]:
    """Why a Re-profile's model is not the one the widget showed, if it is not."""
    differ = other_parameters(parameters_of(report), parameters_of(before), "that one's")
    if differ is None:
        return []
    return [f"The model is not the one this widget showed before: {differ}. A class, function "
            "or variable the providers use was defined again since; running the providers' own "
            "cell again profiles them as it defines them"]


def _edit_target(source: BatchSizeSource) -> dict[str, Any]:
    """What the front end edits while the cell is as it ran: the cell and the literal's span in
    UTF-16 code units; ``{}`` when the literal cannot be edited."""
    if not source.editable:
        return {}
    keys = ("cell_id", "start_utf16", "end_utf16", "value", "text")
    return {key: getattr(source, key) for key in keys}


def _text_line() -> contextlib.AbstractContextManager[TextProgress | None]:
    """A progress line on stdout in an IPython without a kernel (a terminal), where the widget
    cannot show; elsewhere none."""
    from IPython import get_ipython

    if get_ipython() is None or in_kernel():
        return contextlib.nullcontext()
    return TextProgress(sys.stdout, prefix="")


def _readable(exc: BaseException) -> str:
    from skyline_nb.failures import ProfileFailed
    from skyline_nb.profiler.stacks import is_user_file

    if isinstance(exc, KeyboardInterrupt):
        return "interrupted"
    if isinstance(exc, ProfileFailed):  # already the banner: what raised, and where
        return str(exc)
    if isinstance(exc, SyntaxError):  # its str() names the kernel's temporary file
        return f"{type(exc).__name__}: {exc.msg}" + (f", line {exc.lineno}" if exc.lineno else "")
    text = f"{type(exc).__name__}: {exc}"
    tb = traceback.extract_tb(exc.__traceback__)
    user = [f for f in tb if is_user_file(f.filename)]
    if user:
        text += f"\n  at {user[-1].filename}, line {user[-1].lineno}"
    return text
