"""A real Jupyter kernel runs a notebook with %%skyline; what it saves must be shareable."""

from __future__ import annotations

import json
import subprocess
import sys

import nbformat
import pytest
from notebook_cells import SMALL_PROFILED_CELL, run_notebook

from skyline_nb.demo import widget_reports
from skyline_nb.export.html import save_html

pytestmark = pytest.mark.integration



@pytest.fixture(scope="module")
def executed(tmp_path_factory):
    return run_notebook(tmp_path_factory.mktemp("nb"), "profile.ipynb",
                        [nbformat.v4.new_code_cell("%load_ext skyline_nb"),
                         nbformat.v4.new_code_cell(SMALL_PROFILED_CELL),
                         nbformat.v4.new_code_cell("import skyline_nb\n"
                                                   "print(skyline_nb.last_report().batch_size)")])


def test_outputs_carry_widget_view_snapshot_and_text(executed):
    notebook = nbformat.read(executed, as_version=4)
    outputs = notebook.cells[1].outputs
    bundles = [o.data for o in outputs if o.output_type == "display_data"]
    assert len(bundles) == 2
    widget, snapshot = bundles
    assert "application/vnd.jupyter.widget-view+json" in widget
    assert widget["text/plain"].startswith("Skyline profile: batch 16")
    # both displays were updated once the report was in: the saved snapshot is not "no profile"
    assert list(snapshot) == ["text/html"]
    assert "skyline-nb-snapshot" in snapshot["text/html"] and "<svg" in snapshot["text/html"]
    assert notebook.cells[2].outputs[0].text.strip() == "16"


def test_saved_widget_state_keeps_esm_and_report(executed):
    notebook = json.loads(executed.read_text())
    reports = widget_reports(notebook)
    assert len(reports) == 1
    assert reports[0]["batch_size"] == 16
    assert len(reports[0]["samples"]) >= 3  # predictions were on
    assert executed.stat().st_size < 300_000


def test_nbconvert_html_shows_the_static_snapshot(executed, tmp_path):
    subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "html", "--output-dir", str(tmp_path),
         str(executed)],
        check=True, capture_output=True,
    )
    html = (tmp_path / "profile.html").read_text()
    assert "Skyline profile" in html and "samples/s" in html


def test_standalone_page_is_self_contained(executed, tmp_path):
    report = widget_reports(json.loads(executed.read_text()))[0]
    page = save_html(report, tmp_path / "p.html").read_text()
    assert "http://" not in page and "https://" not in page
    assert len(page) < 300_000


def test_embed_minimal_html_keeps_the_bundle(tmp_path):
    """ipywidgets' own embedding keeps anywidget's _esm only with drop_defaults=False."""
    from ipywidgets.embed import embed_minimal_html

    from skyline_nb.widget import SkylineWidget

    widget = SkylineWidget(report={"batch_size": 3})
    path = tmp_path / "embed.html"
    embed_minimal_html(path, views=[widget], drop_defaults=False, title="t")
    html = path.read_text()
    assert '"_esm"' in html and "skyline-nb" in html
    widget.close()
