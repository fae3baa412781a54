"""The wheel carries the widget bundle and the companion labextension, and installs it.

Builds the wheel from this checkout once (without build isolation: the venv has hatchling and
hatch-jupyter-builder, and `make setup` has built the JS), then inspects it and installs it into
a fresh venv with no node on PATH.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import sysconfig
import zipfile
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]
LABEXT = "share/jupyter/labextensions/skyline-nb"


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-q", "--no-deps", "--no-build-isolation",
         "-w", str(out), str(REPO)],
        check=True,
    )  # fmt: skip
    (built,) = out.glob("skyline_nb-*.whl")
    return built


def test_wheel_contains_bundle_and_labextension(wheel: Path):
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        (data,) = {n.split("/")[0] for n in names if n.split("/")[0].endswith(".data")}
        labext = f"{data}/data/{LABEXT}"
        assert "skyline_nb/widget/static/widget.js" in names
        assert {f"{labext}/package.json", f"{labext}/install.json"} <= names
        remote_entry = re.compile(rf"{re.escape(labext)}/static/remoteEntry\.\w+\.js")
        entries = [name for name in names if remote_entry.fullmatch(name)]
        assert len(entries) == 1, entries
        meta = json.loads(zf.read(f"{labext}/package.json"))
        install = json.loads(zf.read(f"{labext}/install.json"))
    assert meta["name"] == "skyline-nb"
    assert f"{labext}/{meta['jupyterlab']['_build']['load']}" == entries[0]
    assert install["packageName"] == "skyline-nb"


def test_wheel_installs_enabled_labextension_without_node(wheel: Path, tmp_path: Path):
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    python = venv / "bin" / "python"
    purelib = Path(
        subprocess.run(
            [python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            check=True, capture_output=True, text=True,
        ).stdout.strip()
    )  # fmt: skip
    # JupyterLab comes from this venv (appended after the fresh venv's own site-packages, and
    # without this venv's .pth files, so the editable skyline_nb stays out of sight).
    (purelib / "dev-venv.pth").write_text(sysconfig.get_path("purelib") + "\n")
    subprocess.run(
        [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps",
         "--no-index", str(wheel)],
        check=True,
    )  # fmt: skip
    assert (purelib / "skyline_nb" / "widget" / "static" / "widget.js").is_file()
    assert (venv / LABEXT / "install.json").is_file()

    env = {
        "PATH": str(venv / "bin"),  # no node
        "HOME": str(tmp_path),
        "JUPYTER_CONFIG_DIR": str(tmp_path / "config"),
        "JUPYTER_DATA_DIR": str(tmp_path / "data"),
        "JUPYTER_RUNTIME_DIR": str(tmp_path / "runtime"),
        "JUPYTER_PLATFORM_DIRS": "1",
        "LANG": os.environ.get("LANG", "C.UTF-8"),
    }
    listed = subprocess.run(
        [python, "-m", "jupyterlab.labextensions", "list"],
        env=env, cwd=tmp_path, check=True, capture_output=True, text=True,
    )  # fmt: skip
    text = re.sub(r"\x1b\[[0-9;]*m", "", listed.stdout + listed.stderr)
    assert f"{venv / 'share/jupyter/labextensions'}" in text, text
    assert re.search(r"skyline-nb v0\.1\.0 enabled\s+OK \(python, skyline-nb\)", text), text
    imported = subprocess.run(
        [python, "-c", "import skyline_nb.widget as w; print(w.__file__)"],
        env=env, cwd=tmp_path, check=True, capture_output=True, text=True,
    )  # fmt: skip
    assert imported.stdout.startswith(str(purelib)), imported.stdout
