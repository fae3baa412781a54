"""Shareable output in a real browser that may not reach anything but the page under test.

A profile sent to a colleague must show without our package, a kernel or the internet, so every
test here routes ALL of the browser context's requests: ``file:``, ``blob:`` and ``data:`` URLs
and the Jupyter server under test pass, anything else is aborted and recorded. Three ways of
sharing are checked, each the way a colleague would open it:

- the standalone page (``Report.to_html``) from ``file://``: the real widget, read-only;
- ``jupyter nbconvert --to html`` of an executed notebook from ``file://``: the static snapshot;
- the executed notebook (widget state saved by nbclient) reopened in JupyterLab / Notebook 7 with a
  fresh kernel and NOT re-run: the widget renders from the saved state, the snapshot is hidden.

Each test also saves a screenshot in ``test-artifacts/`` (what a user would see).
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import nbformat
import pytest
from notebook_cells import SMALL_PROFILED_CELL, run_notebook
from playwright.sync_api import expect

from skyline_nb.export.html import save_html

pytestmark = [pytest.mark.browser, pytest.mark.timeout(180)]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
REPORT: dict[str, Any] = json.loads((FIXTURES / "report_cnn.json").read_text(encoding="utf-8"))
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
LOCAL_SCHEMES = ("file:", "blob:", "data:")



class Offline:
    """Refuses every request of a browser context that leaves the page under test.

    ``attempted`` lists the refused URLs (a page that is really self-contained asks for none);
    ``leaked`` lists foreign responses that arrived anyway (must always stay empty: it proves the
    blocking itself works).
    """

    def __init__(self, context: Any, origin: str | None = None) -> None:
        self.origin = origin.rstrip("/") + "/" if origin else None
        self.attempted: list[str] = []
        self.leaked: list[str] = []
        context.route("**/*", self._route)
        context.on("requestfinished", self._finished)
        context.on("page", self.watch)
        for page in context.pages:
            self.watch(page)

    def allowed(self, url: str) -> bool:
        if url.startswith(LOCAL_SCHEMES):
            return True
        if self.origin is None:
            return False
        local = self.origin.replace("http://", "ws://")
        return url.startswith((self.origin, local))

    def watch(self, page: Any) -> None:
        # WebSockets bypass context.route; record any that would leave the machine.
        page.on("websocket", self._websocket)

    def _websocket(self, socket: Any) -> None:
        if not self.allowed(socket.url):
            self.attempted.append(socket.url)

    def _route(self, route: Any) -> None:
        url = route.request.url
        if self.allowed(url):
            route.continue_()
        else:
            self.attempted.append(url)
            route.abort("blockedbyclient")

    def _finished(self, request: Any) -> None:
        if not self.allowed(request.url):
            self.leaked.append(request.url)


def _screenshot(page: Any, name: str) -> None:
    ARTIFACTS.mkdir(exist_ok=True)
    page.screenshot(path=ARTIFACTS / name, full_page=True)


def _part(root: Any, name: str) -> Any:
    return root.locator(f'[data-skyline="{name}"]')


def _node_time(node: dict[str, Any]) -> float:
    return node["forward_ms"] + (node["backward_ms"] or 0.0)


@pytest.fixture
def offline_page(browser: Any) -> Any:
    """A fresh page behind ``Offline`` (no server allowed), with its console errors collected."""
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        offline = Offline(context)
        page = context.new_page()
        errors: list[str] = []
        page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda error: errors.append(str(error)))
        yield page, offline, errors
    finally:
        context.close()


@pytest.fixture(scope="module")
def executed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A small %%skyline notebook run by nbclient, widget state saved, as `make demo` does."""
    return run_notebook(tmp_path_factory.mktemp("shareable"), "shared.ipynb",
                        [nbformat.v4.new_markdown_cell("# Shared profile"),
                         nbformat.v4.new_code_cell("%load_ext skyline_nb"),
                         nbformat.v4.new_code_cell(SMALL_PROFILED_CELL)])


def test_standalone_page_is_the_interactive_widget_offline(offline_page, tmp_path):
    page, offline, errors = offline_page
    path = save_html(REPORT, tmp_path / "profile.html", title="Skyline profile: CNN")
    page.goto(path.as_uri())
    widget = page.locator('[data-skyline="root"]')
    for name in ("throughput-bar", "memory-bar", "breakdown-time", "breakdown-memory"):
        expect(_part(widget, name)).to_be_visible()
    time_segments = _part(_part(widget, "breakdown-time"), "segment")
    assert time_segments.count() == sum(1 for c in REPORT["tree"]["children"] if _node_time(c))
    assert _part(_part(widget, "breakdown-memory"), "segment").count() > 0
    expect(_part(widget, "predicted-batch-size")).to_have_text(str(REPORT["batch_size"]))
    # The page stores the report compact (frames interned); the widget gets it back exactly.
    unpacked = page.evaluate(
        "() => skylineExpand(JSON.parse(document.getElementById('skyline-report').textContent))")
    assert unpacked == REPORT
    assert _part(widget, "line-marker").count() > 0  # frames resolved to lines of the code
    expect(page.locator("body")).to_contain_text("cannot edit notebook cells")
    expect(_part(widget, "reprofile")).to_have_count(0)  # no kernel: no kernel buttons
    _screenshot(page, "shareable-standalone.png")

    module = max((c for c in REPORT["tree"]["children"] if c["children"]), key=_node_time)
    segment = _part(widget, "breakdown-time").locator(
        f'[data-skyline="segment"][data-node="{module["path"]}"]')
    segment.hover()
    tooltip = _part(widget, "tooltip")
    expect(tooltip).to_be_visible()
    expect(tooltip).to_contain_text(module["name"])

    crumbs = _part(widget, "breadcrumb")
    segment.dblclick()
    expect(crumbs.locator('[aria-current="location"]')).to_have_attribute("data-path",
                                                                         module["path"])
    _part(widget, "back").click()
    expect(crumbs).to_have_text(REPORT["tree"]["name"])

    bar = _part(widget, "throughput-bar")
    box = bar.bounding_box()
    x, y = box["x"] + box["width"] / 2, box["y"] + box["height"] / 2
    page.mouse.move(x, y)
    page.mouse.down()
    for step in range(1, 11):
        page.mouse.move(x, y - 4 * step)
    page.mouse.up()
    assert int(_part(widget, "predicted-batch-size").text_content()) > REPORT["batch_size"]

    assert errors == []
    assert offline.attempted == [] and offline.leaked == []


@pytest.mark.parametrize("scheme", ["light", "dark"])
def test_standalone_page_follows_the_os_colour_scheme(offline_page, tmp_path, scheme):
    """The widget takes dark fallbacks from a dark OS; the page around it must follow."""
    page, _offline, _errors = offline_page
    page.emulate_media(color_scheme=scheme)
    page.goto(save_html(REPORT, tmp_path / "profile.html").as_uri())
    expect(page.locator('[data-skyline="throughput-bar"]')).to_be_visible()
    background, text = page.evaluate(
        """() => [getComputedStyle(document.body).backgroundColor,
                  getComputedStyle(document.querySelector('.skyline-nb')).color]""")
    luminance = [sum(int(v) for v in c[c.index("(") + 1:-1].split(",")[:3]) / 3
                 for c in (background, text)]
    dark_page = luminance[0] < 128
    assert dark_page == (scheme == "dark")
    assert abs(luminance[0] - luminance[1]) > 128  # readable text on its background


def test_nbconvert_html_shows_the_static_snapshot_offline(offline_page, executed, tmp_path):
    subprocess.run(
        [sys.executable, "-m", "nbconvert", "--to", "html", "--output-dir", str(tmp_path),
         str(executed)],
        check=True, capture_output=True,
    )
    page, offline, _ = offline_page
    page.goto((tmp_path / "shared.html").as_uri())
    snapshot = page.locator(".skyline-nb-snapshot")
    expect(snapshot).to_be_visible()
    expect(snapshot).to_contain_text("batch 16")
    expect(snapshot).to_contain_text("samples/s")
    bars = snapshot.locator("svg rect")
    assert bars.count() >= 4
    for i in range(bars.count()):
        if float(bars.nth(i).get_attribute("width")) > 1:
            expect(bars.nth(i)).to_be_visible()
    expect(page.locator('[data-skyline="root"]')).to_have_count(0)  # the widget needs the CDN
    _screenshot(page, "shareable-nbconvert.png")
    # saved without widget state (JupyterLab's default), nbconvert shows the widget's text/plain
    # headline in its place: hidden beside the snapshot, which says it again
    plain = nbformat.read(executed, as_version=4)
    plain.metadata.pop("widgets", None)
    nbformat.write(plain, tmp_path / "plain.ipynb")
    subprocess.run([sys.executable, "-m", "nbconvert", "--to", "html", "--output-dir",
                    str(tmp_path), str(tmp_path / "plain.ipynb")], check=True, capture_output=True)
    page.goto((tmp_path / "plain.html").as_uri())
    expect(page.locator(".skyline-nb-snapshot")).to_contain_text("batch 16")
    fallback = page.locator('[data-mime-type="text/plain"]')
    assert "Skyline profile: batch 16" in fallback.first.text_content()
    expect(fallback.first).to_be_hidden()
    expect(page.locator(".skyline-nb-snapshot")).to_be_visible()
    # nbconvert's template asks CDNs for require.js, MathJax and the widget manager: all refused.
    assert offline.leaked == []


def _open_without_running(notebook: Any, name: str) -> None:
    """Open ``name`` (its kernel starts fresh) and wait until that kernel is idle; run nothing.

    Not ``NotebookPage.open``: it waits with ``time.sleep``, and Playwright's sync API only
    runs route handlers while a Playwright call is in progress, so behind ``Offline`` the
    page's requests (the kernel's session among them) would stall. Waiting with
    ``page.wait_for_timeout`` keeps them flowing.
    """
    notebook.name = name
    server, page = notebook.server, notebook.page
    url_path = {"lab": f"lab/workspaces/shareable-{notebook.frontend}/tree/{name}",
                "notebook7": f"notebooks/{name}"}[notebook.frontend]
    page.goto(server.page_url(url_path))
    page.locator(".jp-Notebook .jp-Cell").first.wait_for()
    state = "no session"
    for _ in range(150):
        sessions = [s for s in server.api("GET", "api/sessions") if s["path"] == name]
        state = sessions[0]["kernel"]["execution_state"] if sessions else state
        if state == "idle":
            return
        page.wait_for_timeout(200)
    raise AssertionError(f"the kernel of {name} is not idle after 30 s: {state}")


def test_reopened_notebook_renders_the_widget_from_saved_state(notebook, executed):
    name = f"reopened-{notebook.frontend}.ipynb"
    shutil.copy(executed, notebook.server.root / name)
    # JupyterLab renders widget views only for trusted outputs; a notebook nbclient wrote is
    # not signed. Trust it in the server's own notary (its JUPYTER_DATA_DIR).
    subprocess.run([sys.executable, "-m", "jupyter", "trust", str(notebook.server.root / name)],
                   env=notebook.server.env, check=True, capture_output=True)
    page = notebook.page
    offline = Offline(page.context, origin=notebook.server.url)
    _open_without_running(notebook, name)
    widget = page.locator('.jp-OutputArea [data-skyline="root"]')
    expect(_part(widget, "throughput-bar")).to_be_visible()
    expect(_part(widget, "predicted-batch-size")).to_have_text("16")
    expect(_part(_part(widget, "breakdown-time"), "segment").first).to_be_visible()
    snapshot = page.locator(".skyline-nb-snapshot")
    expect(snapshot).to_have_count(1)  # the saved output is there, hidden by the widget's CSS
    expect(snapshot).to_be_hidden()
    _screenshot(page, f"shareable-reopened-{notebook.frontend}.png")
    assert offline.attempted == [] and offline.leaked == []
