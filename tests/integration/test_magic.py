"""%skyline / %%skyline in a real (in-process) IPython shell, profiling real models on CPU."""

from __future__ import annotations

import json

import pytest
import torch
from IPython import get_ipython
from IPython.core.error import UsageError
from IPython.testing.globalipapp import start_ipython
from IPython.utils.capture import capture_output

import skyline_nb
from skyline_nb import cells
from skyline_nb.export.units import format_bytes
from skyline_nb.report import SCHEMA_VERSION

PROVIDERS = '''import torch
from torch import nn


def skyline_model_provider():
    return nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 4))


def skyline_input_provider(batch_size=12):
    return torch.randn(batch_size, 64), torch.randint(0, 4, (batch_size,))


def skyline_iteration_provider(model):
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = nn.CrossEntropyLoss()

    def iteration(x, y):
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()

    return iteration
'''


@pytest.fixture
def ip():
    # Reuse a shell another test module already made (a second one would be a traitlets
    # MultipleInstanceError); start IPython's test shell only when there is none.
    shell = get_ipython() or start_ipython() or get_ipython()
    shell.run_line_magic("load_ext", "skyline_nb")
    for name in [n for n in shell.user_ns if n.startswith(("skyline_", "deepview_"))]:
        del shell.user_ns[name]
    shell.user_ns.pop("batch_size", None)
    cells.clear()
    yield shell
    magics = shell._skyline_nb_magics
    for live in magics.live:
        live.widget.close()
    magics.live.clear()
    magics.by_cell.clear()


def run(ip, code: str, cell_id: str):
    result = ip.run_cell(code, cell_id=cell_id)
    return result


def test_line_magic_profiles_providers_of_another_cell(ip):
    assert run(ip, PROVIDERS, "cell-a").success
    result = run(ip, "%skyline --no-predict", "cell-b")
    assert result.success, result.error_in_exec
    report = skyline_nb.last_report()
    assert report.batch_size == 12
    assert report.source.editable and report.source.cell_id == "cell-a"
    code = report.source.code
    assert code[report.source.start:report.source.end] == "12"
    # ops in the model's forward map to the lines of cell-a that the user sees
    lines = {f.line for n in report.tree.walk() for f in n.frames if f.cell_id == "cell-a"}
    assert 20 in lines  # `loss_fn(model(x), y).backward()`
    assert any(s.cell_id == "cell-a" for s in report.sources)


OWN_NAMES = (PROVIDERS.replace("skyline_model_provider", "make_model")
             .replace("skyline_input_provider", "make_inputs")
             .replace("skyline_iteration_provider", "make_step"))


@pytest.mark.parametrize(("extra", "magic"), [
    ("", "%skyline --no-predict -m make_model -i make_inputs -t make_step"),  # named
    ("\nskyline_model_provider, skyline_input_provider = make_model, make_inputs\n"
     "skyline_iteration_provider = make_step\n", "%skyline --no-predict"),  # aliased
    ("\nimport functools\n\nskyline_input_provider = functools.partial(make_inputs)\n"
     "skyline_model_provider, skyline_iteration_provider = make_model, make_step\n",
     "%skyline --no-predict"),  # a partial that binds no batch size
    ("\nimport functools\n\n"
     "skyline_input_provider = functools.partial(make_inputs, batch_size=12)\n"
     "skyline_model_provider, skyline_iteration_provider = make_model, make_step\n",
     "%skyline --no-predict"),  # a partial that binds it: its own 12
    ("\nskyline_input_provider = lambda batch_size=12: make_inputs(batch_size)\n"
     "skyline_model_provider, skyline_iteration_provider = make_model, make_step\n",
     "%skyline --no-predict"),  # a lambda
    ("\nmy_inputs = lambda batch_size=12: make_inputs(batch_size)\n",
     "%skyline --no-predict -m make_model -i my_inputs -t make_step"),  # a lambda named by -i
])
def test_a_provider_of_its_own_name_has_its_literal_edited(ip, extra, magic):
    """The literal is found in the input provider's own ``def``, whatever name the profile
    took it by; a drag's edit (the front end's ``locate``) and a ``%%skyline`` rerun's too."""
    assert run(ip, OWN_NAMES + extra, "cell-own").success
    assert run(ip, magic, "cell-mag").success
    report = skyline_nb.last_report()
    assert report.source.editable, report.source.reason
    assert report.source.code[report.source.start:report.source.end] == "12"
    # the lambda's or the partial's own 12, where they hold one
    assert (report.source.start > len(OWN_NAMES)) == ("batch_size=12" in extra)
    live = ip._skyline_nb_magics.live[-1]
    answer = live.locate_edit({"code": OWN_NAMES + extra, "batch_size": 20})
    assert answer["ok"] and answer["edit"]["text"] == "20", answer
    cell = "%%skyline --no-predict -m make_model -i make_inputs -t make_step\n" + OWN_NAMES
    assert run(ip, cell, "cell-own2").success
    ip._skyline_nb_magics.by_cell["cell-own2"].widget.selected_batch_size = 7
    assert run(ip, cell, "cell-own2").success  # the drag no front end wrote: the kernel does
    assert ip.rl_next_input == cell.replace("batch_size=12", "batch_size=7")


def test_providers_imported_from_a_file_name_it_where_the_literal_is_not_edited(
        ip, tmp_path, monkeypatch):
    """Providers in the user's own module, imported into the notebook: the widget cannot edit
    that file, and says which file and line hold the batch size (it said only "not defined in
    a notebook cell of this session")."""
    (tmp_path / "my_providers.py").write_text(PROVIDERS)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(__import__("sys").modules, "my_providers", raising=False)
    assert run(ip, "from my_providers import *", "cell-imp").success
    assert run(ip, "%skyline --no-predict", "cell-imp2").success
    source = skyline_nb.last_report().source
    assert not source.editable
    assert source.reason == (
        f"the input provider skyline_input_provider comes from {tmp_path / 'my_providers.py'}, "
        "line 9, not from a notebook cell: the widget edits the batch size in notebook cells "
        "only; change it in that file, or define the input provider in a cell")


@pytest.mark.parametrize("ending", ["\n", ""])  # notebook cells usually have no final newline
def test_cell_magic_maps_lines_under_the_magic_line(ip, ending):
    result = run(ip, "%%skyline --no-predict\n\n" + PROVIDERS.rstrip("\n") + ending, "cell-c")
    assert result.success, result.error_in_exec
    report = skyline_nb.last_report()
    assert report.source.cell_id == "cell-c"
    code = report.source.code
    assert code.startswith("%%skyline --no-predict\n")
    assert code[report.source.start:report.source.end] == "12"
    lines = {f.line for n in report.tree.walk() for f in n.frames if f.cell_id == "cell-c"}
    assert 22 in lines  # the backward line, two lines lower: the magic line and a blank line


def test_missing_provider_is_a_usage_error(ip):
    run(ip, "def skyline_model_provider():\n    return None\n", "cell-d")
    result = run(ip, "%skyline", "cell-e")
    assert isinstance(result.error_in_exec, UsageError)
    assert "skyline_input_provider" in str(result.error_in_exec)


def test_provider_error_shows_in_widget_and_raises(ip):
    broken = PROVIDERS.replace("    return nn.Sequential", "    raise RuntimeError('boom')\n")
    assert run(ip, broken.replace("(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 4))", ""),
               "cell-f").success
    result = run(ip, "%skyline --no-predict", "cell-g")
    assert result.error_in_exec is not None
    assert "boom" in str(result.error_in_exec)
    assert not ip._skyline_nb_magics.live  # a failed profile is not watched


def test_rerunning_the_source_cell_reprofiles_the_widget(ip):
    run(ip, PROVIDERS, "cell-h")
    assert run(ip, "%skyline --no-predict", "cell-i").success
    live = ip._skyline_nb_magics.live[-1]
    assert live.widget.report["batch_size"] == 12
    assert run(ip, PROVIDERS.replace("batch_size=12", "batch_size=6"), "cell-h").success
    assert live.widget.report["batch_size"] == 6
    assert live.widget.status == ""


def _parameters(report) -> dict[str, int]:
    return {w.name: w.bytes for w in report.weights}


def test_a_notebook_of_two_models_keeps_each_widget_on_its_own(ip):
    """Providers of the same names defined again for a second model in a later cell: the first
    widget's Measure, Re-profile and edits stay with the first model (they ran the second)."""
    wide = PROVIDERS.replace("nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 4)",
                             "nn.Linear(64, 256), nn.ReLU(), nn.Linear(256, 4)")
    run(ip, PROVIDERS, "cell-2a")
    assert run(ip, "%skyline --no-predict", "cell-2b").success
    first = ip._skyline_nb_magics.live[-1]
    narrow = _parameters(first.report)
    run(ip, wide.replace("batch_size=12", "batch_size=10"), "cell-2c")
    assert run(ip, "%skyline --no-predict", "cell-2d").success
    second = ip._skyline_nb_magics.live[-1]
    assert _parameters(second.report) != narrow and second.report.batch_size == 10
    first._on_msg(first.widget, {"kind": "reprofile"}, [])
    assert _parameters(first.report) == narrow and first.report.batch_size == 12
    assert not any(w.startswith("The model is not") for w in first.report.warnings)
    assert first.report.source.cell_id == "cell-2a" and first.report.source.editable
    edit = first.locate_edit({"code": PROVIDERS, "batch_size": 48})["edit"]
    assert PROVIDERS[:edit["start"]].endswith("def skyline_input_provider(batch_size=")
    assert run(ip, PROVIDERS.replace("Linear(32, 4)", "Linear(32, 5)"), "cell-2a").success
    assert _parameters(first.report)["2.weight"] == 5 * 32 * 4  # its own cell ran again
    assert _parameters(second.report) != _parameters(first.report)


def test_a_measurement_of_a_model_defined_again_is_not_joined(ip):
    """The first widget's providers call a class that a later cell defined again: Measure at N
    builds that class, and says so rather than join its time to the first model's curve."""
    classy = PROVIDERS.replace("def skyline_model_provider():\n    return nn.Sequential(",
                               "class Net(nn.Sequential):\n    pass\n\n\n"
                               "def skyline_model_provider():\n    return Net(")
    run(ip, classy, "cell-3a")
    assert run(ip, "%skyline", "cell-3b").success
    live = ip._skyline_nb_magics.live[-1]
    run(ip, "class Net(nn.Sequential):\n    def __init__(self, *layers):\n"
            "        super().__init__(nn.Linear(64, 4))", "cell-3c")
    live._on_msg(live.widget, {"kind": "measure", "batch_size": 100}, [])
    assert live.widget.error == ""
    measured = live.widget.measurement
    assert not measured["joined"] and measured["not_joined"].startswith(
        "the model measured is not this profile's")
    assert 100 not in [s["batch_size"] for s in live.widget.report["samples"]]
    live._on_msg(live.widget, {"kind": "reprofile"}, [])  # profiles what they build now
    assert _parameters(live.report) == {"0.weight": 64 * 4 * 4, "0.bias": 4 * 4}
    assert any(w.startswith("The model is not the one this widget showed before: its "
                            "parameters hold 1.02 KiB in 2 tensors, that one's 8.64 KiB in 4")
               for w in live.report.warnings), live.report.warnings
    live._on_msg(live.widget, {"kind": "reprofile"}, [])  # the same again: nothing to say
    assert not any(w.startswith("The model is not") for w in live.report.warnings)


def test_running_a_cell_again_closes_the_widget_its_last_run_made(ip):
    run(ip, PROVIDERS, "cell-aa")
    twice = "%skyline --no-predict\n%skyline --no-predict\n"
    assert ip.run_cell(twice, store_history=True, cell_id="cell-ab").success
    first = ip._skyline_nb_magics.live[-2:]
    assert all(p.widget.comm is not None for p in first)  # one run keeps all it showed
    assert ip.run_cell(twice, store_history=True, cell_id="cell-ab").success
    assert all(p.widget.comm is None for p in first)  # its outputs were replaced
    assert all(p.widget.comm is not None for p in ip._skyline_nb_magics.live[-2:])


@pytest.mark.parametrize(("signature", "option"), [
    ("()", "--batch-size-var batch_size"),  # named
    ("()", ""),  # read by the provider
    ("(batch_size)", ""),  # passed to a parameter without a default
])
def test_batch_size_variable(ip, signature, option):
    code = PROVIDERS.replace("def skyline_input_provider(batch_size=12):",
                             f"batch_size = 10\n\n\ndef skyline_input_provider{signature}:")
    assert run(ip, code, "cell-j").success
    assert run(ip, f"%skyline --no-predict {option}", "cell-k").success
    report = skyline_nb.last_report()
    assert report.batch_size == 10
    assert report.source.kind == "module_variable"
    assert report.source.code[report.source.start:report.source.end] == "10"
    # "Measure at N" calls the input provider with batch_size=N, bridged like the profile
    live = ip._skyline_nb_magics.live[-1]
    live._on_msg(live.widget, {"kind": "measure", "batch_size": 5}, [])
    assert live.widget.error == ""
    measured = live.widget.measurement
    assert measured["batch_size"] == 5
    # with what tells a prediction's error from noise: the steps timed, how far apart they lay
    assert measured["steps"] >= 3 and 0 <= measured["spread"] < 10
    assert isinstance(measured["waited"], bool)
    assert measured["throughput"] == 5000.0 / measured["iteration_ms"]
    assert ip.user_ns["batch_size"] == 10  # the global is restored
    # Re-profile: the measurement belonged to the report it replaces
    live._on_msg(live.widget, {"kind": "reprofile"}, [])
    assert live.widget.error == "" and live.widget.measurement == {}


def test_a_variable_of_another_name_is_named_in_the_refusal(ip):
    """``BATCH_SIZE = 10`` read by a provider without ``batch_size``: the option to name it,
    before any widget; named, it profiles."""
    code = PROVIDERS.replace("def skyline_input_provider(batch_size=12):",
                             "BATCH_SIZE = 10\n\n\ndef skyline_input_provider():"
                             ).replace("(batch_size, 64)", "(BATCH_SIZE, 64)").replace(
                                 "(batch_size,))", "(BATCH_SIZE,))")
    assert run(ip, code, "cell-j2").success
    widgets = len(ip._skyline_nb_magics.live)
    with pytest.raises(UsageError, match=r"reads BATCH_SIZE = 10 from the notebook: "
                                         r"`%skyline --batch-size-var BATCH_SIZE`"):
        ip.run_line_magic("skyline", "--no-predict")
    assert len(ip._skyline_nb_magics.live) == widgets
    assert run(ip, "%skyline --no-predict --batch-size-var BATCH_SIZE", "cell-k2").success
    assert skyline_nb.last_report().batch_size == 10


def test_a_measurement_beyond_the_samples_joins_the_widgets_report(ip, tmp_path):
    """"Measure at N" past the samples: the widget's report holds N (and the kernel side's,
    ``last_report()`` and what ``-o`` exports), the trait keeps the prediction made before;
    or, not joined, it says why."""
    run(ip, PROVIDERS, "cell-m")
    assert run(ip, "%skyline", "cell-n").success
    live = ip._skyline_nb_magics.live[-1]
    for _ in range(4):  # a noisy host may leave a profile without a curve: Re-profile, as users do
        if live.report.models.can_manipulate:
            break
        live._on_msg(live.widget, {"kind": "reprofile"}, [])
    assert live.report.models.can_manipulate, live.report.models.reason
    size = 4 * max(s.batch_size for s in live.report.samples)
    before = live.report.models.predict_iteration_ms(size)
    live._on_msg(live.widget, {"kind": "measure", "batch_size": size}, [])
    assert live.widget.error == ""
    measured = live.widget.measurement
    assert measured["batch_size"] == size and measured["predicted_ms"] == before
    sizes = [s["batch_size"] for s in live.widget.report["samples"]]
    if measured["joined"]:
        assert size in sizes and live.report.models.measured_range[1] == size
        assert live.widget.report["models"]["measured_range"][1] == size
        assert skyline_nb.last_report() is live.report
        with capture_output():
            assert run(ip, f"%skyline -o {tmp_path / 'j.json'}", "cell-o").success
        exported = json.loads((tmp_path / "j.json").read_text())
        assert size in [s["batch_size"] for s in exported["samples"]]
    else:
        assert measured["not_joined"] and size not in sizes


def test_pending_drag_is_applied_on_the_next_cell_magic_run(ip):
    cell = "%%skyline --no-predict\n" + PROVIDERS.rstrip("\n")
    assert run(ip, cell, "cell-l").success
    live = ip._skyline_nb_magics.by_cell["cell-l"]
    live.widget.selected_batch_size = 7  # a drag that no front-end path could write
    assert run(ip, cell, "cell-l").success
    assert skyline_nb.last_report().batch_size == 7
    assert ip.rl_next_input == cell.replace("batch_size=12", "batch_size=7")


def test_a_literal_grouped_by_underscores_is_edited_in_its_spelling(ip):
    """``batch_size=1_024``: the front end is told the literal as written (its expected text),
    and a drag the kernel writes keeps the grouping."""
    grouped = PROVIDERS.rstrip("\n").replace("batch_size=12", "batch_size=1_024")
    cell = "%%skyline --no-predict\n" + grouped
    assert run(ip, cell, "cell-g").success
    live = ip._skyline_nb_magics.by_cell["cell-g"]
    target = live.widget.edit_target
    assert target["text"] == "1_024" and target["value"] == 1024
    assert cell[target["start_utf16"]:target["end_utf16"]] == "1_024"  # ASCII cell: UTF-16 = str
    live.widget.selected_batch_size = 2048
    assert run(ip, cell, "cell-g").success
    assert skyline_nb.last_report().batch_size == 2048
    assert ip.rl_next_input == cell.replace("1_024", "2_048")


def test_a_drag_the_front_end_wrote_and_the_user_undid_stays_undone(ip):
    """The front end wrote 7 into the cell; the user pressed Ctrl+Z there and ran the cell as
    it reads again (12): the kernel does not write the drag in a second time."""
    cell = "%%skyline --no-predict\n" + PROVIDERS.rstrip("\n")
    assert run(ip, cell, "cell-u").success
    live = ip._skyline_nb_magics.by_cell["cell-u"]
    live.widget.selected_batch_size = live.widget.written_batch_size = 7
    ip.rl_next_input = None
    assert run(ip, cell, "cell-u").success
    assert skyline_nb.last_report().batch_size == 12
    assert ip.rl_next_input is None
    fresh = ip._skyline_nb_magics.by_cell["cell-u"].widget  # the new profile's widget
    assert fresh.selected_batch_size is None and fresh.written_batch_size is None


def test_output_exports_the_profile_shown_while_its_providers_are_unchanged(ip, tmp_path):
    run(ip, PROVIDERS, "cell-v")
    assert run(ip, "%skyline --no-predict", "cell-w").success
    shown = skyline_nb.last_report()
    widgets = len(ip._skyline_nb_magics.live)
    with capture_output() as out:
        assert run(ip, f"%skyline --no-predict -o {tmp_path / 'p.html'}", "cell-x").success
    assert skyline_nb.last_report() is shown  # exported, not profiled again
    assert len(ip._skyline_nb_magics.live) == widgets and not out.outputs  # no second widget
    size = format_bytes((tmp_path / "p.html").stat().st_size)
    assert out.stdout == f"wrote {tmp_path / 'p.html'} ({size})\n"


def test_output_exports_a_profile_the_widget_made_again(ip, tmp_path):
    """Re-profile names the report's batch size; ``%skyline`` without ``--batch-size`` takes
    the provider's default, the same 12: the export is of that profile, not a new one."""
    run(ip, PROVIDERS, "cell-v")
    assert run(ip, "%skyline --no-predict", "cell-w").success
    live = ip._skyline_nb_magics.live[-1]
    live._on_msg(live.widget, {"kind": "reprofile"}, [])
    shown = skyline_nb.last_report()
    assert shown is live.report
    with capture_output():
        assert run(ip, f"%skyline --no-predict -o {tmp_path / 'p.json'}", "cell-x").success
    assert skyline_nb.last_report() is shown


@pytest.mark.parametrize("change", [
    "--reprofile",  # asked for
    "--batch-size 5",  # another option
    "redefine",  # a class the model provider uses, redefined in another cell
])
def test_output_profiles_again_when_something_changed(ip, tmp_path, change):
    model_class = "from torch import nn\n\n\nclass Net(nn.Sequential):\n    pass\n"
    run(ip, model_class, "cell-y")
    run(ip, PROVIDERS.replace("    return nn.Sequential(", "    return Net("), "cell-z")
    assert run(ip, "%skyline --no-predict", "cell-w").success
    shown = skyline_nb.last_report()
    if change == "redefine":
        run(ip, model_class, "cell-y")
    option = "" if change == "redefine" else change
    with capture_output() as out:
        assert run(ip, f"%skyline --no-predict {option} -o {tmp_path / 'r.json'}", "cell-x").success
    assert skyline_nb.last_report() is not shown
    assert out.stdout.endswith(f"wrote {tmp_path / 'r.json'} "
                               f"({format_bytes((tmp_path / 'r.json').stat().st_size)})\n")


def test_export_by_suffix(ip, tmp_path):
    run(ip, PROVIDERS, "cell-m")
    for name in ("t.sqlite", "m.memory.sqlite", "r.json", "c.trace.json", "p.html"):
        assert run(ip, f"%skyline --no-predict --no-watch -o {tmp_path / name}", "cell-n").success
        assert (tmp_path / name).stat().st_size > 0
    trace = json.loads((tmp_path / "c.trace.json").read_text())
    assert {e["ph"] for e in trace["traceEvents"]} == {"M", "X", "C"}
    assert "not recorded timestamps" in trace["metadata"]["timing"]
    assert json.loads((tmp_path / "r.json").read_text())["schema_version"] == SCHEMA_VERSION
    result = run(ip, f"%skyline --no-predict -o {tmp_path / 'x.txt'}", "cell-o")
    assert isinstance(result.error_in_exec, UsageError)


def test_usage_errors_come_before_any_profiling(ip, tmp_path):
    (tmp_path / "folder.sqlite").mkdir()
    run(ip, PROVIDERS, "cell-r")
    before = skyline_nb.last_report()
    for line, message in [("--memory-budget lots", "8GiB"), (f"-o {tmp_path / 'x.txt'}", ".json"),
                          (f"-o {tmp_path / 'nowhere' / 'x.sqlite'}", "nowhere does not exist"),
                          (f"-o {tmp_path / 'folder.sqlite'}", "is a folder"),
                          ("--batch-size 0", "batch size must be at least 1, not 0"),
                          ("--batch-size -2", "batch size must be at least 1, not -2"),
                          # these two showed an empty widget and a NameError / TypeError
                          ("--batch-size-var nosuch", "no variable `nosuch` is defined"),
                          ("--batch-size-var word", "`word` is 'x', not a positive int"),
                          *([] if torch.cuda.is_available() else  # a ValueError, in the widget
                            [("--device cuda", "torch sees no CUDA GPU here")])]:
        ip.user_ns["word"] = "x"
        result = run(ip, f"%%skyline --no-predict {line}\nran = True\n", "cell-s")
        assert isinstance(result.error_in_exec, UsageError) and message in str(result.error_in_exec)
        assert "ran" not in ip.user_ns and skyline_nb.last_report() is before


def test_a_failing_source_cell_shows_in_the_widget_until_it_runs_again(ip):
    run(ip, PROVIDERS, "cell-s")
    assert run(ip, "%skyline --no-predict", "cell-t").success
    live = ip._skyline_nb_magics.live[-1]
    assert not run(ip, PROVIDERS + "\ndef broken(:\n    pass\n", "cell-s").success
    line = (PROVIDERS + "\ndef broken(:\n").count("\n")  # the cell's own line number
    assert live.widget.error == (
        f"The source cell did not run (SyntaxError: invalid syntax, line {line}); the profile "
        "below is from its last successful run."
    )
    assert live.widget.report["batch_size"] == 12  # the last good profile stays
    assert run(ip, PROVIDERS, "cell-s").success
    assert live.widget.error == ""


def test_a_failing_cell_magic_body_fails_the_cell(ip):
    result = run(ip, "%%skyline --no-predict\nx = (\n", "cell-u")
    assert isinstance(result.error_in_exec, UsageError)
    assert "nothing was profiled" in str(result.error_in_exec)
