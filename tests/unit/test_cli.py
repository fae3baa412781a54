"""The ``skyline-nb`` command line: arguments, refusals, ENTRY loading and what reaches profile().

Each test runs ``main()`` in process with ``skyline_nb.profile`` replaced by a recorder that
returns a hand-built Report, so they check the CLI alone; ``test_cli_end_to_end.py`` runs the
real profiler on the bundled example in a subprocess, as a user would, and ``test_entry.py``
what the CLI shares with the magic.
"""

from __future__ import annotations

import json
import sqlite3
import sys
import textwrap
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest
import torch
from sample_reports import sample_report

import skyline_nb
from skyline_nb.cli import main
from skyline_nb.export.trace import TIMING_NOTE
from skyline_nb.models.performance import PerformanceModels
from skyline_nb.profiler.progress import Progress
from skyline_nb.report import SCHEMA_VERSION, Report
from skyline_nb.textprogress import TextProgress

PROVIDERS = """
import json, pathlib
def {p}model_provider():
    return "model"
def {p}input_provider(batch_size=32):
    return batch_size
def {p}iteration_provider(model):
    return lambda x: None
"""


def _entry(
    folder: Path, body: str = PROVIDERS.format(p="skyline_"), name: str = "entry.py"
) -> Path:
    path = folder / name
    path.write_text(textwrap.dedent(body), encoding="utf-8")
    return path


class Recorder:
    """Stands in for skyline_nb.profile: remembers the call, returns a hand-built Report."""

    def __init__(self, error: Exception | None = None) -> None:
        self.calls: list[tuple[tuple[Any, ...], dict[str, Any]]] = []
        self.error = error

    def __call__(self, *args: Any, **kwargs: Any) -> Report:
        self.calls.append((args, kwargs))
        if self.error is not None:
            raise self.error
        return sample_report()


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    fake = Recorder()
    monkeypatch.setattr(skyline_nb, "profile", fake)
    return fake


def _run(argv: list[Any], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# ---- a memory budget it cannot read -------------------------------------------------------
@pytest.mark.parametrize("text", ["", "lots", "8 GiBs", "-1G", "0", "0.1b", "1e9"])
def test_parse_size_rejects(text: str, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = _run(
        ["profile", _entry(tmp_path), "-o", tmp_path / "r.json", "--memory-budget", text], capsys
    )
    assert code == 2
    assert "--memory-budget" in err and "Traceback" not in err


# ---- usage errors: exit 2, one message, no traceback ---------------------------------------
def test_help_and_version(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = _run(["--help"], capsys)
    assert code == 0 and "skyline_input_provider(batch_size=N)" in out
    for command in ("time", "memory", "profile"):
        code, out, _ = _run([command, "--help"], capsys)
        assert code == 0 and "--batch-size" in out and "--project-root" in out
    code, out, _ = _run(["--version"], capsys)
    assert code == 0 and out.strip() == f"skyline-nb {skyline_nb.__version__}"


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["time"],
        ["time", "e.py"],
        ["trace", "e.py", "-o", "x"],
        ["time", "e.py", "-o", "x", "--batch-size", "0"],
        ["time", "e.py", "-o", "x", "--batch-size", "many"],
        ["time", "e.py", "-o", "x", "--device", "tpu"],
        ["time", "e.py", "-o", "x", "--no-predict"],  # time/memory never predict
        ["memory", "e.py", "-o", "x", "--memory-budget", "1G"],
    ],
)
def test_bad_arguments(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = _run(argv, capsys)
    assert code == 2
    assert "usage: skyline-nb" in err and "Traceback" not in err


@pytest.mark.parametrize(
    "argv", [["time", "e.py", "--bogus"], ["profile", "e.py", "-o", "r.json", "-x"]]
)
def test_an_unknown_option_is_named_before_a_missing_output(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = _run(argv, capsys)
    assert code == 2
    assert f"error: unrecognized arguments: {argv[-1]}" in err and "required" not in err


def test_missing_entry(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], recorder: Recorder
) -> None:
    code, _, err = _run(["time", tmp_path / "nope.py", "-o", tmp_path / "t.sqlite"], capsys)
    assert (code, err) == (2, f"skyline-nb: error: ENTRY {tmp_path / 'nope.py'} is not a file\n")
    assert recorder.calls == []


def test_missing_providers_are_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], recorder: Recorder
) -> None:
    entry = _entry(tmp_path, "def skyline_model_provider():\n    return 1\n")
    code, _, err = _run(["memory", entry, "-o", tmp_path / "m.sqlite"], capsys)
    assert code == 2
    assert err == (
        "skyline-nb: error: entry.py does not define skyline_input_provider or "
        "deepview_input_provider, skyline_iteration_provider or deepview_iteration_provider\n"
    )
    assert recorder.calls == [] and not (tmp_path / "m.sqlite").exists()


def test_provider_that_is_not_a_function(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], recorder: Recorder
) -> None:
    entry = _entry(tmp_path, PROVIDERS.format(p="skyline_") + "skyline_model_provider = 3\n")
    code, _, err = _run(["time", entry, "-o", tmp_path / "t.sqlite"], capsys)
    assert code == 2 and "skyline_model_provider is an int, not a function" in err


def test_existing_output_is_refused_before_anything_runs(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    recorder: Recorder,
) -> None:
    marker = tmp_path / "entry-ran"
    entry = _entry(
        tmp_path, f"open({str(marker)!r}, 'w').close()\n" + PROVIDERS.format(p="skyline_")
    )
    output = tmp_path / "t.sqlite"
    output.write_text("previous report")
    code, _, err = _run(["time", entry, "-o", output], capsys)
    assert code == 2
    assert err == (
        f"skyline-nb: error: output {output} already exists; pass --force to overwrite it\n"
    )
    assert output.read_text() == "previous report"
    assert not marker.exists() and recorder.calls == []


def test_output_folder_must_exist(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], recorder: Recorder
) -> None:
    code, _, err = _run(["time", _entry(tmp_path), "-o", tmp_path / "no" / "t.sqlite"], capsys)
    assert code == 2 and "does not exist" in err
    code, _, err = _run(["time", _entry(tmp_path), "-o", tmp_path], capsys)
    assert code == 2 and "is a folder" in err


# ---- the user's code failing: exit 1, their traceback only ---------------------------------
def test_entry_raising_shows_the_users_traceback(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    recorder: Recorder,
) -> None:
    entry = _entry(tmp_path, "x = 1\nraise RuntimeError('no data folder')\n")
    code, _, err = _run(["time", entry, "-o", tmp_path / "t.sqlite"], capsys)
    assert code == 1
    assert err.startswith("skyline-nb: error: running entry.py raised RuntimeError: no data")
    assert f'File "{entry}", line 2, in <module>' in err
    assert "runpy" not in err and "cli.py" not in err


def test_entry_syntax_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], recorder: Recorder
) -> None:
    entry = _entry(tmp_path, "def broken(:\n")
    code, _, err = _run(["time", entry, "-o", tmp_path / "t.sqlite"], capsys)
    assert code == 1 and "SyntaxError" in err and "runpy" not in err


def test_entry_calling_exit_does_not_end_the_cli(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    recorder: Recorder,
) -> None:
    code, _, err = _run(
        ["time", _entry(tmp_path, "import sys\nsys.exit(3)\n"), "-o", tmp_path / "t.sqlite"], capsys
    )
    assert code == 1 and "raised SystemExit: 3" in err


@pytest.mark.parametrize("debug", [False, True])
def test_profiler_failure_is_one_line_unless_debug(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    debug: bool,
) -> None:
    monkeypatch.setattr(skyline_nb, "profile", Recorder(ValueError("input provider returned 3")))
    argv: list[Any] = ["time", _entry(tmp_path), "-o", tmp_path / "t.sqlite"]
    code, _, err = _run([*argv, "--debug"] if debug else argv, capsys)
    assert code == 1
    assert "failed: ValueError: input provider returned 3" in err
    assert ("Traceback" in err) is debug
    assert not (tmp_path / "t.sqlite").exists()


def test_provider_raising_shows_the_profiler_message_and_the_users_frames(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from skyline_nb.profiler.errors import ProviderError

    def fake_profile(model_provider: Any, input_provider: Any, *_: Any, **__: Any) -> Report:
        try:
            input_provider(8)
        except Exception as exc:
            raise ProviderError("skyline_input_provider (entry.py, line 2) raised") from exc
        raise AssertionError("the provider should have raised")

    monkeypatch.setattr(skyline_nb, "profile", fake_profile)
    body = PROVIDERS.format(p="skyline_").replace(
        "    return batch_size\n", "    raise KeyError('labels.csv')\n"
    )
    entry = _entry(tmp_path, body)
    code, _, err = _run(["time", entry, "-o", tmp_path / "t.sqlite"], capsys)
    assert code == 1
    assert err.startswith("skyline-nb: error: skyline_input_provider (entry.py, line 2) raised\n")
    assert f'File "{entry}", line 6, in skyline_input_provider' in err
    assert "KeyError: 'labels.csv'" in err
    assert "test_cli.py" not in err and "--debug" not in err


# ---- what reaches profile() and what is written --------------------------------------------
def test_time_calls_profile_without_predictions_and_writes_sqlite(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    recorder: Recorder,
) -> None:
    path_before, argv_before = list(sys.path), list(sys.argv)
    output = tmp_path / "t.sqlite"
    code, out, err = _run(["time", _entry(tmp_path), "-o", output], capsys)
    assert code == 0, err
    assert err == "skyline-nb: warning: sample warning\n"
    assert out.startswith(f"skyline-nb: wrote {output} (")
    assert "), 8 operations: batch 32 on cpu" in out
    ((providers, options),) = recorder.calls
    assert [p.__name__ for p in providers] == [
        "skyline_model_provider",
        "skyline_input_provider",
        "skyline_iteration_provider",
    ]
    assert providers[0].__module__ == "__skyline_entry__"
    assert isinstance(options.pop("progress"), TextProgress)
    assert options == {
        "batch_size": None,
        "device": None,
        "predict": False,
        "project_root": tmp_path.resolve(),
        "memory_budget": None,
    }
    assert (sys.path, sys.argv) == (path_before, argv_before)
    with closing(sqlite3.connect(output)) as connection:
        assert connection.execute("SELECT COUNT(*) FROM run_time_entries").fetchone() == (8,)


def test_memory_with_options_and_deepview_names(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    recorder: Recorder,
) -> None:
    (tmp_path / "src").mkdir()
    entry = _entry(tmp_path / "src", PROVIDERS.format(p="deepview_"))
    output = tmp_path / "m.sqlite"
    code, out, _ = _run(
        [
            "memory",
            entry,
            "-o",
            output,
            "--batch-size",
            "48",
            "--device",
            "cpu",
            "--project-root",
            tmp_path,
            "--quiet",
        ],
        capsys,
    )
    assert code == 0 and "), 5 weights:" in out
    ((providers, options),) = recorder.calls
    assert providers[2].__name__ == "deepview_iteration_provider"
    assert options == {
        "batch_size": 48,
        "device": "cpu",
        "predict": False,
        "project_root": tmp_path.resolve(),
        "memory_budget": None,
        "progress": None,
    }
    with closing(sqlite3.connect(output)) as connection:
        assert connection.execute("SELECT COUNT(*) FROM weight_entries").fetchone() == (5,)


def test_entry_imports_its_sibling_modules(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], recorder: Recorder
) -> None:
    (tmp_path / "skyline_cli_sibling_model.py").write_text("SIZE = 7\n")
    entry = _entry(
        tmp_path,
        "import skyline_cli_sibling_model as m\n"
        + PROVIDERS.format(p="skyline_").replace("batch_size=32", "batch_size=m.SIZE"),
    )
    try:
        assert _run(["time", entry, "-o", tmp_path / "t.sqlite"], capsys)[0] == 0
    finally:
        sys.modules.pop("skyline_cli_sibling_model", None)
    assert recorder.calls[0][0][1].__defaults__ == (7,)


def test_profile_writes_json_predicts_and_force_overwrites(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    recorder: Recorder,
) -> None:
    output = tmp_path / "report.json"
    output.write_text("{}")
    argv: list[Any] = ["profile", _entry(tmp_path), "-o", output, "--memory-budget", "8GiB"]
    assert _run(argv, capsys)[0] == 2
    assert _run([*argv, "--force"], capsys)[0] == 0
    assert Report.from_json(output) == sample_report()
    assert recorder.calls[0][1]["predict"] is True
    assert recorder.calls[0][1]["memory_budget"] == 8 << 30
    assert _run([*argv, "--force", "--no-predict"], capsys)[0] == 0
    assert recorder.calls[1][1]["predict"] is False
    assert json.loads(output.read_text())["schema_version"] == SCHEMA_VERSION
    assert sorted(p.name for p in tmp_path.iterdir()) == ["entry.py", "report.json"]


def test_profile_says_why_there_are_no_predictions(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    refused = sample_report()
    refused.models = PerformanceModels.from_samples(
        [32], [19.25], [1536 * 1024], 16 << 30,
        "only 1 batch size could be measured (32): at batch size 64, the input provider f "
        "(entry.py, line 5) raised ValueError: 40 rows; predictions need 3")
    monkeypatch.setattr(skyline_nb, "profile", lambda *a, **k: refused)
    code, _, err = _run(["profile", _entry(tmp_path), "-o", tmp_path / "r.json"], capsys)
    assert code == 0
    assert ("skyline-nb: predictions off: only 1 batch size could be measured (32): at batch "
            "size 64, the input provider f (entry.py, line 5) raised ValueError: 40 rows") in err
    monkeypatch.setattr(skyline_nb, "profile", lambda *a, **k: sample_report())
    _, _, err = _run(["profile", _entry(tmp_path), "-o", tmp_path / "r.json", "--force"], capsys)
    assert "predictions off" not in err  # dragging on: nothing to say


def test_profile_chooses_the_format_by_the_output_suffix(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], recorder: Recorder
) -> None:
    trace = tmp_path / "run.trace.json"
    code, out, _ = _run(["profile", _entry(tmp_path), "-o", trace], capsys)
    assert code == 0 and out.startswith(f"skyline-nb: wrote {trace}")
    assert json.loads(trace.read_text())["metadata"]["timing"] == TIMING_NOTE
    code, _, err = _run(["profile", _entry(tmp_path), "-o", tmp_path / "r.txt"], capsys)
    assert code == 2 and ".trace.json" in err and len(recorder.calls) == 1  # before profiling


def test_progress_lines_on_stderr_one_per_stage_off_a_terminal(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def staged_profile(*_args: Any, progress: Any, **_kwargs: Any) -> Report:
        progress(Progress("building the model and timing an iteration", 0.0, 0.2, None))
        progress(Progress("timing each op (run 1)", 0.5, 3.0, 3.4))
        return sample_report()

    monkeypatch.setattr(skyline_nb, "profile", staged_profile)
    code, out, err = _run(["profile", _entry(tmp_path), "-o", tmp_path / "r.json"], capsys)
    assert code == 0 and out.startswith("skyline-nb: wrote")
    assert err.splitlines()[:2] == [
        "skyline-nb:   0% building the model and timing an iteration · 0 s elapsed · "
        "estimating the time left",
        "skyline-nb:  50% timing each op (run 1) · 3 s elapsed · about 3 s left",
    ]


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is there to be asked for")
def test_cuda_asked_for_without_a_gpu_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], recorder: Recorder
) -> None:
    """It read "profiling entry.py failed: ValueError: device 'cuda' was asked for …", exit 1,
    as if the profile had broken."""
    entry = _entry(tmp_path, PROVIDERS.format(p="skyline_"))
    code, _, err = _run(["time", entry, "-o", tmp_path / "t.sqlite", "--device", "cuda"], capsys)
    assert code == 2 and "--device cuda: torch sees no CUDA GPU here" in err
    assert recorder.calls == []
