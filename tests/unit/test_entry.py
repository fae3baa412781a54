"""``skyline_nb.entry``: what the command line and the magic share — sizes, finding the
providers by name, and the export chosen by the output's suffix."""

from __future__ import annotations

from pathlib import Path

import pytest
from sample_reports import sample_report

from skyline_nb.entry import UsageError, export, export_kind, find_providers, parse_size


@pytest.mark.parametrize(
    ("text", "size"),
    [
        ("8GiB", 8 << 30),
        ("512MB", 512 * 10**6),
        ("512mb", 512 * 10**6),
        ("1.5G", 3 << 29),
        ("100", 100),
        ("2 KiB", 2048),
        ("64k", 65536),
        ("1TB", 10**12),
        ("7b", 7),
    ],
)
def test_parse_size(text: str, size: int) -> None:
    assert parse_size(text) == size


@pytest.mark.parametrize("text", ["lots", "0", "1e9"])
def test_parse_size_raises_a_usage_error(text: str) -> None:
    with pytest.raises(UsageError, match=r"8GiB|at least one byte"):
        parse_size(text)


def test_find_providers_by_skyline_or_deepview_name_or_by_the_names_given() -> None:
    def model() -> None: ...
    def inputs() -> None: ...
    def step() -> None: ...

    namespace = {"skyline_model_provider": model, "deepview_input_provider": inputs,
                 "my_step": step, "skyline_iteration_provider": model}
    assert find_providers(namespace, where="x") == (model, inputs, model)
    assert find_providers(namespace, {"iteration": "my_step"}, where="x") == (model, inputs, step)
    with pytest.raises(UsageError, match=r"^x does not define other_model, skyline_input"):
        find_providers({"my_step": step}, {"model": "other_model"}, where="x")
    with pytest.raises(UsageError, match=r"^x: my_step is an int, not a function$"):
        find_providers({**namespace, "my_step": 3}, {"iteration": "my_step"}, where="x")
    # a typo in a provider's name, or in the name given for it: the nearest function is named
    typo = {"skyline_model_provider": model, "skyline_input_provder": inputs, "my_stepp": step,
            "skyline_input_count": 3}
    with pytest.raises(UsageError) as info:
        find_providers(typo, {"iteration": "my_step"}, where="x")
    assert str(info.value) == (
        "x does not define skyline_input_provider or deepview_input_provider (did you mean "
        "skyline_input_provder?), my_step (did you mean my_stepp?)")


@pytest.mark.parametrize(
    ("name", "kind"),
    [("t.sqlite", "time"), ("R.Memory.SQLite", "memory"), ("r.json", "json"),
     ("r.trace.json", "trace"), ("p.html", "html")],
)
def test_export_by_suffix(tmp_path: Path, name: str, kind: str) -> None:
    path = tmp_path / name
    assert export_kind(path) == kind
    assert export(sample_report(), path, overwrite=False) == path and path.stat().st_size > 0
    with pytest.raises(FileExistsError):
        export(sample_report(), path, overwrite=False)
    export(sample_report(), path, overwrite=True)


def test_export_refuses_other_names(tmp_path: Path) -> None:
    with pytest.raises(UsageError, match=r"\.sqlite, \.memory\.sqlite, \.json or \.html"):
        export_kind(tmp_path / "report.txt")
