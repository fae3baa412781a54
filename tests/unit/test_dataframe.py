"""``report.to_dataframe``: one row per module or op, adding up to the report's totals; without
pandas, a message saying how to get it."""

from __future__ import annotations

import sys

import pytest
from sample_reports import sample_report

from skyline_nb.examples import cnn
from skyline_nb.export.dataframe import COLUMNS
from skyline_nb.profiler.session import profile


@pytest.fixture(scope="module")
def report():
    return profile(cnn.skyline_model_provider, cnn.skyline_input_provider,
                   cnn.skyline_iteration_provider, batch_size=4, device="cpu", predict=False)


def test_module_rows_at_depth_one_and_op_rows_add_up_to_the_totals(report) -> None:
    pytest.importorskip("pandas")
    modules = report.to_dataframe()
    ops = report.to_dataframe(level="op")
    assert list(modules.columns) == list(COLUMNS) == list(ops.columns)
    top = modules[modules.depth == 1]
    for frame in (top, ops):
        assert frame.total_ms.sum() == pytest.approx(report.iteration_ms)
        assert frame.flops.sum() == report.total_flops > 0
        assert frame.peak_activation_bytes.sum() == report.tree.peak_activation_bytes
    # the gradients alive at the peak are the modules' (none of an op's or of the optimizer's)
    grads = report.categories["grads"]
    assert top.peak_grad_bytes.sum() == grads == report.tree.peak_grad_bytes > 0
    assert (ops.peak_grad_bytes == 0).all()
    assert "blocks.0.conv1" in set(modules.path) and (modules.kind == "op").sum() <= 2
    convs = ops[ops.name == "convolution"]
    assert len(convs) == 7 and (convs.flops_per_s > 0).all()


def test_a_cell_is_named_by_its_id_and_lines_are_integers() -> None:
    pytest.importorskip("pandas")
    modules = sample_report().to_dataframe()
    assert str(modules.line.dtype) == "Int64"
    framed = modules[modules.file.notna()]
    assert len(framed) > 0 and framed.file.str.match(r"<cell [^>]+>$").all()
    assert modules.line[modules.file.isna()].isna().all()


def test_unknown_level_is_refused() -> None:
    with pytest.raises(ValueError, match="level must be one of module, op"):
        sample_report().to_dataframe(level="layer")


def test_without_pandas_the_message_says_how_to_get_it(monkeypatch) -> None:
    monkeypatch.setitem(sys.modules, "pandas", None)
    with pytest.raises(ImportError, match="pip install pandas"):
        sample_report().to_dataframe()
