"""Browser harness: real JupyterLab 4 and Notebook 7 servers, driven by Playwright on chromium.

Fixtures:
    lab_server / notebook7_server  one `jupyter lab` / `jupyter notebook` per session, started on
                                   first use on a free 127.0.0.1 port over a temporary directory,
                                   with a random token and this venv's Python as the kernel.
    browser                        one headless Debian chromium per session.
    frontend                       "lab" or "notebook7": a test using `notebook` runs once in each
                                   (`@pytest.mark.parametrize("frontend", ["lab"])` picks one).
    notebook                       a NotebookPage (fresh browser context) on the chosen frontend;
                                   on failure it leaves a screenshot and the browser console in
                                   test-artifacts/.

Every fixture stops what it started (the server's process group and its kernels, the browser)
at teardown, whatever the outcome.
"""

from __future__ import annotations

import contextlib
import importlib.metadata
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest
from playwright.sync_api import expect, sync_playwright

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"
SERVER_START_TIMEOUT_S = 60
UI_TIMEOUT_MS = 30_000
expect.set_options(timeout=15_000)  # a 2-core CI machine renders slowly

# frontend -> (jupyter subcommand, URL path of a notebook). Lab opens each notebook in a
# workspace of its own, so tabs of earlier tests are not restored into the page.
FRONTENDS = {
    "lab": ("lab", "lab/workspaces/{workspace}/tree/{name}"),
    "notebook7": ("notebook", "notebooks/{name}"),
}

# Settings that keep the UI deterministic and offline: every cell stays in the DOM (no
# windowing), and no news / update check is fetched.
USER_SETTINGS = {
    "@jupyterlab/notebook-extension/tracker": {"windowingMode": "none"},
    "@jupyterlab/apputils-extension/notification": {"checkForUpdates": False, "fetchNews": "false"},
}

_REPORTS = pytest.StashKey[dict[str, pytest.TestReport]]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]):
    """Keep each phase's report on the item, so fixtures can tell at teardown if the test failed."""
    report = yield
    item.stash.setdefault(_REPORTS, {})[report.when] = report
    return report


def _failed(request: pytest.FixtureRequest) -> bool:
    reports = request.node.stash.get(_REPORTS, {})
    return any(report.failed for report in reports.values())


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _check_installed() -> None:
    """Fail early, with the fix, when the package or its labextension is not installed."""
    from jupyter_core.paths import jupyter_path

    try:
        importlib.metadata.distribution("skyline-nb")
    except importlib.metadata.PackageNotFoundError:
        pytest.fail("skyline-nb is not installed in this venv: run `make setup`")
    if not any(
        Path(d, "skyline-nb", "package.json").is_file() for d in jupyter_path("labextensions")
    ):
        pytest.fail("the skyline-nb labextension is not installed: run `make setup`")


class JupyterServer:
    """One `jupyter lab|notebook` process, isolated in `base`, bound to 127.0.0.1 only."""

    def __init__(self, app: str, base: Path) -> None:
        self.app = app
        self.root = base / "root"
        self.runtime = base / "runtime"
        self.log_path = base / "server.log"
        self.port = _free_port()
        self.token = secrets.token_hex(16)
        self.url = f"http://127.0.0.1:{self.port}/"
        self.env = self._prepare(base)
        self.proc: subprocess.Popen[bytes] | None = None

    def _prepare(self, base: Path) -> dict[str, str]:
        config, data, ipython = base / "config", base / "data", base / "ipython"
        for folder in (self.root, self.runtime, config, data, ipython):
            folder.mkdir(parents=True)
        # The kernel is this venv's Python, so it imports the skyline_nb under test.
        kernel = data / "kernels" / "python3"
        kernel.mkdir(parents=True)
        spec = {
            "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
            "display_name": "Python 3 (skyline_nb tests)",
            "language": "python",
        }
        (kernel / "kernel.json").write_text(json.dumps(spec))
        for plugin, values in USER_SETTINGS.items():
            path = config / "lab" / "user-settings" / f"{plugin}.jupyterlab-settings"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(json.dumps(values))
        env = dict(os.environ)
        # User-level dirs are isolated; sys.prefix/share/jupyter (where the labextension is
        # installed) stays on the default path.
        env.update(
            JUPYTER_CONFIG_DIR=str(config),
            JUPYTER_DATA_DIR=str(data),
            JUPYTER_RUNTIME_DIR=str(self.runtime),
            JUPYTERLAB_SETTINGS_DIR=str(config / "lab" / "user-settings"),
            JUPYTERLAB_WORKSPACES_DIR=str(config / "lab" / "workspaces"),
            IPYTHONDIR=str(ipython),
            JUPYTER_PLATFORM_DIRS="1",
            PYDEVD_DISABLE_FILE_VALIDATION="1",
        )
        env.pop("JUPYTER_PATH", None)
        env.pop("ANYWIDGET_HMR", None)
        return env

    def start(self) -> None:
        command = [
            sys.executable, "-m", "jupyter", self.app,
            "--no-browser", "--allow-root", "--ip=127.0.0.1", f"--port={self.port}",
            "--ServerApp.port_retries=0", f"--ServerApp.root_dir={self.root}",
            f"--IdentityProvider.token={self.token}",
        ]  # fmt: skip
        with self.log_path.open("wb") as log:
            self.proc = subprocess.Popen(
                command, env=self.env, cwd=self.root, stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, start_new_session=True,
            )  # fmt: skip
        deadline = time.monotonic() + SERVER_START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"jupyter {self.app} exited early:\n{self.log_tail()}")
            with contextlib.suppress(OSError):
                self.api("GET", "api/status")
                return
            time.sleep(0.25)
        raise RuntimeError(f"jupyter {self.app} did not answer in time:\n{self.log_tail()}")

    def api(self, method: str, path: str) -> Any:
        request = urllib.request.Request(
            self.url + path, method=method, headers={"Authorization": f"token {self.token}"}
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            body = response.read()
        return json.loads(body) if body else None

    def page_url(self, path: str) -> str:
        return f"{self.url}{path}?token={self.token}"

    def log_tail(self, lines: int = 60) -> str:
        if not self.log_path.exists():
            return ""
        return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(OSError):  # the clean way: also shuts the kernels down
                self.api("POST", "api/shutdown")
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait(timeout=10)
        if self.proc is not None:  # the server's own children, if any outlived it
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self.proc.pid, signal.SIGKILL)
        self._kill_own_kernels()

    def _kill_own_kernels(self) -> None:
        """Kernels run in their own session; find ours by their connection file in runtime/."""
        marker = str(self.runtime).encode()
        for proc_dir in Path("/proc").glob("[0-9]*"):
            with contextlib.suppress(OSError):
                if marker in (proc_dir / "cmdline").read_bytes():
                    os.kill(int(proc_dir.name), signal.SIGKILL)


def _server(frontend: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterServer]:
    _check_installed()
    server = JupyterServer(FRONTENDS[frontend][0], tmp_path_factory.mktemp(f"jupyter-{frontend}"))
    try:
        server.start()
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterServer]:
    yield from _server("lab", tmp_path_factory)


@pytest.fixture(scope="session")
def notebook7_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterServer]:
    yield from _server("notebook7", tmp_path_factory)


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    if not CHROMIUM.exists():
        pytest.fail(f"{CHROMIUM} is missing: `apt-get install chromium` (.ci/run does)")
    playwright = sync_playwright().start()
    try:
        browser = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield browser
        finally:
            browser.close()
    finally:
        playwright.stop()


@pytest.fixture(params=list(FRONTENDS))
def frontend(request: pytest.FixtureRequest) -> str:
    return request.param


class NotebookPage:
    """A Playwright page on one frontend, with the steps a notebook user takes."""

    def __init__(self, page: Any, server: JupyterServer, frontend: str) -> None:
        self.page = page
        self.server = server
        self.frontend = frontend
        self.name = ""

    @property
    def path(self) -> Path:
        return self.server.root / self.name

    def write(self, name: str, cells: dict[str, str]) -> Path:
        """Write a notebook of code cells {cell id: source} into the server's root."""
        nb = nbformat.v4.new_notebook()
        nb.metadata["kernelspec"] = {
            "name": "python3",
            "display_name": "Python 3",
            "language": "python",
        }
        nb.cells = [
            nbformat.v4.new_code_cell(source, id=cell_id) for cell_id, source in cells.items()
        ]
        self.name = name
        nbformat.write(nb, self.path)
        return self.path

    def open(self, name: str | None = None) -> None:
        """Open the notebook and wait until its kernel is idle."""
        self.name = name or self.name
        workspace = re.sub(r"\W+", "-", self.name)
        url_path = FRONTENDS[self.frontend][1].format(name=self.name, workspace=workspace)
        self.page.goto(self.server.page_url(url_path))
        self.page.locator(".jp-Notebook .jp-Cell").first.wait_for()
        self.wait_for_kernel_idle()

    def wait_for_kernel_idle(self, timeout_s: float = 30) -> None:
        deadline = time.monotonic() + timeout_s
        state = "no session"
        while time.monotonic() < deadline:
            sessions = [s for s in self.server.api("GET", "api/sessions") if s["path"] == self.name]
            if sessions:
                state = sessions[0]["kernel"]["execution_state"]
                if state == "idle":
                    return
            time.sleep(0.2)
        raise AssertionError(f"kernel of {self.name} not idle after {timeout_s} s: {state}")

    def run_all(self, timeout_ms: float = 180_000) -> None:
        """Run > Run All Cells, then wait until every code cell shows an execution count (a
        profile cell may take a minute on a slow or shared CI machine: Playwright's default
        30 s failed a GRU profile there). Checked every 250 ms, not at every animation frame
        (Playwright's default): the browser shares the kernel's cores, and a user's browser
        does not run script 60 times a second while a profile runs."""
        self.page.locator(".lm-MenuBar-itemLabel", has_text=re.compile(r"^Run$")).click()
        self.page.locator(".lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
        self.wait_all_ran(timeout_ms)

    def wait_all_ran(self, timeout_ms: float = 180_000) -> None:
        """Wait until every code cell shows an execution count, then for the kernel to idle (it
        idles for a moment between two cells of a Run All: idle alone does not say all ran)."""
        self.page.wait_for_function(
            """() => {
                const prompts = [...document.querySelectorAll('.jp-CodeCell .jp-InputPrompt')];
                return prompts.length > 0 && prompts.every(p => /\\[\\d+\\]/.test(p.textContent));
            }""",
            polling=250,
            timeout=timeout_ms,
        )
        self.wait_for_kernel_idle()

    def shut_down_kernel(self) -> None:
        for session in self.server.api("GET", "api/sessions"):
            if session["path"] == self.name:
                self.server.api("DELETE", f"api/sessions/{session['id']}")

    def output_text(self) -> str:
        return "\n".join(self.page.locator(".jp-OutputArea").all_inner_texts())

    def save(self) -> dict[str, Any]:
        """Save with Ctrl+S and return the notebook read back from disk once it changed."""
        before = self.path.stat().st_mtime_ns
        self.page.locator(".jp-Cell .jp-InputPrompt").first.click()
        self.page.keyboard.press("Control+s")
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline:
            if self.path.stat().st_mtime_ns != before:
                with contextlib.suppress(ValueError):  # a write in flight
                    return json.loads(self.path.read_text())
            time.sleep(0.1)
        raise AssertionError(f"{self.name} was not saved to disk within 15 s of Ctrl+S")


@pytest.fixture
def notebook(request: pytest.FixtureRequest, browser: Any, frontend: str) -> Iterator[NotebookPage]:
    server: JupyterServer = request.getfixturevalue(f"{frontend}_server")
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    try:
        notebook = NotebookPage(context.new_page(), server, frontend)
        page = notebook.page
        console: list[str] = []
        page.set_default_timeout(UI_TIMEOUT_MS)
        page.on("console", lambda msg: console.append(f"[{msg.type}] {msg.text}"))
        page.on("pageerror", lambda error: console.append(f"[pageerror] {error}"))
        try:
            yield notebook
            if _failed(request):
                ARTIFACTS.mkdir(exist_ok=True)
                stem = re.sub(r"[^\w.-]+", "_", request.node.nodeid)
                with contextlib.suppress(Exception):  # a dead page must not hide the failure
                    page.screenshot(path=ARTIFACTS / f"{stem}.png", full_page=True)
                (ARTIFACTS / f"{stem}.console.txt").write_text("\n".join(console))
                (ARTIFACTS / f"{stem}.server.log").write_text(server.log_tail(400))
        finally:
            if notebook.name:  # its kernel would otherwise idle until the session ends
                with contextlib.suppress(OSError):
                    notebook.shut_down_kernel()
    finally:
        context.close()


@contextlib.contextmanager
def user_settings(server: JupyterServer, plugin: str, values: dict[str, Any]) -> Iterator[None]:
    """Override one plugin's user settings (e.g. turn notebook windowing back ON) for the pages
    opened inside the block; the file the session started with comes back afterwards.

    `plugin` is a USER_SETTINGS key ("@jupyterlab/notebook-extension/tracker"). The server reads
    the file on each request, so only pages (re)loaded inside the block see the override.
    """
    path = Path(server.env["JUPYTERLAB_SETTINGS_DIR"]) / f"{plugin}.jupyterlab-settings"
    before = path.read_text() if path.exists() else None
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**USER_SETTINGS.get(plugin, {}), **values}))
    try:
        yield
    finally:
        if before is None:
            path.unlink(missing_ok=True)
        else:
            path.write_text(before)
