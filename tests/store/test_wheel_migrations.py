"""A wheel install (pip, the Docker image) carries the Alembic environment and finds it.

Builds the real wheel and installs it, without dependencies, into a throwaway virtual environment
of its own (``python -m venv --without-pip``; pip runs from this venv with ``--python``). Only
after the install does the throwaway venv get a ``.pth`` line pointing at this venv's
site-packages, for the dependencies; the project's editable install is not active there (a
``.pth`` inside a ``.pth``-added folder is not run), so the installed copy is what gets imported.
The installed console script's ``m3mon db upgrade`` must find the migrations under
``<venv>/share/m3-monitor/migrations`` and create every table. The last test checks that this
venv's own ``m3mon`` still works afterwards (``make test`` followed by ``make demo``).
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
from importlib.metadata import version
from pathlib import Path

import pytest
from sqlalchemy import create_engine, inspect

from monitor.store.tables import Base

REPO = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.timeout(240)


def _run(*cmd: str, env: dict[str, str] | None = None, cwd: Path | None = None) -> str:
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=180, check=False, env=env, cwd=cwd)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    return proc.stdout


def _listing(folder: Path) -> tuple[set[str], dict[str, bytes]]:
    """What an install or uninstall would change: the entries of site-packages, and the project's
    own editable-install files (names only elsewhere: imports on another worker may add caches)."""
    ours = [p for p in folder.glob("*m3_monitor*") if p.is_file()] + list(folder.glob("m3_monitor*/RECORD"))
    return {p.name for p in folder.iterdir()}, {str(p): p.read_bytes() for p in ours}


@pytest.fixture(scope="module")
def own_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A throwaway venv holding the wheel's install; this venv's site-packages is left as it was."""
    ours = Path(sysconfig.get_path("purelib"))
    before = _listing(ours)
    tmp = tmp_path_factory.mktemp("wheel")
    _run(sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "-q", "-w", str(tmp / "dist"))
    (wheel,) = (tmp / "dist").glob("m3_monitor-*.whl")
    venv = tmp / "venv"
    _run(sys.executable, "-m", "venv", "--without-pip", str(venv))
    _run(sys.executable, "-m", "pip", "--python", str(venv / "bin" / "python"), "install", "--no-deps",
         "--no-compile", "-q", str(wheel))  # fmt: skip
    purelib = Path(sysconfig.get_path("purelib", vars={"base": str(venv), "platbase": str(venv)}))
    assert purelib.is_relative_to(venv) and (purelib / "monitor").is_dir(), purelib
    (purelib / "m3mon-test-deps.pth").write_text(f"{ours}\n")
    assert _listing(ours) == before, "installing the wheel elsewhere changed this venv's site-packages"
    return venv


def _env() -> dict[str, str]:
    drop = ("M3MON_MIGRATIONS", "PYTHONPATH", "VIRTUAL_ENV")
    return {k: v for k, v in os.environ.items() if k not in drop} | {"PYTHONNOUSERSITE": "1"}


def test_the_wheel_ships_the_migrations(own_venv: Path) -> None:
    versions = own_venv / "share" / "m3-monitor" / "migrations" / "versions"
    assert {p.name for p in versions.glob("*.py")} == {
        p.name for p in (REPO / "migrations" / "versions").glob("*.py")
    }


def test_the_installed_package_finds_and_applies_them(own_venv: Path, tmp_path: Path) -> None:
    code = "import monitor, monitor.store.migrate as m; print(monitor.__file__); print(m.migrations_dir())"
    python = str(own_venv / "bin" / "python")
    module, found = _run(python, "-c", code, env=_env(), cwd=tmp_path).split()
    assert Path(module).is_relative_to(own_venv), module  # the installed copy, not this checkout
    assert Path(found) == own_venv / "share" / "m3-monitor" / "migrations"
    config = tmp_path / "monitor.yaml"
    db = tmp_path / "m3mon.db"
    config.write_text((REPO / "examples" / "monitor.yaml").read_text().replace(
        "sqlite:///m3mon.db", f"sqlite:///{db}"))  # fmt: skip
    _run(str(own_venv / "bin" / "m3mon"), "db", "upgrade", "-c", str(config), env=_env(), cwd=tmp_path)
    tables = set(inspect(create_engine(f"sqlite:///{db}")).get_table_names())
    assert set(Base.metadata.tables) <= tables


def test_a_missing_environment_names_where_it_looked(tmp_path: Path) -> None:
    env = os.environ | {"M3MON_MIGRATIONS": str(tmp_path / "nowhere")}
    code = "from monitor.store.migrate import migrations_dir; migrations_dir()"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env,
                          check=False)  # fmt: skip
    assert proc.returncode != 0 and f"looked in {tmp_path / 'nowhere'}" in proc.stderr


def test_this_venv_keeps_its_console_script(own_venv: Path) -> None:
    """Runs last in this module: after the wheel was built and installed elsewhere, this venv's
    ``m3mon`` (what ``make demo`` runs) still starts and still imports this checkout."""
    script = Path(sys.executable).parent / "m3mon"
    assert own_venv.is_dir() and script.exists()
    proc = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0 and "check-config" in proc.stdout, proc.stderr[-2000:]
    assert _run(str(script), "--version").strip() == f"m3mon {version('m3-monitor')}"
    code = "import monitor; print(monitor.__file__)"
    module = _run(sys.executable, "-c", code, env=_env(), cwd=Path("/")).strip()
    assert Path(module).is_relative_to(REPO), module
