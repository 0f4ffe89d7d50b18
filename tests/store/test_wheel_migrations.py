"""A wheel install (pip, the Docker image) carries the Alembic environment and finds it.

Builds the real wheel, installs it without dependencies under a throwaway prefix, and runs the
installed package (not this checkout) in a subprocess: ``m3mon db upgrade`` must find the
migrations under ``<prefix>/share/m3-monitor/migrations`` and create every table.
"""

from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
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


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A prefix holding the wheel's install (like ``pip install --user``)."""
    tmp = tmp_path_factory.mktemp("wheel")
    _run(sys.executable, "-m", "pip", "wheel", str(REPO), "--no-deps", "-q", "-w", str(tmp / "dist"))
    (wheel,) = (tmp / "dist").glob("m3_monitor-*.whl")
    prefix = tmp / "prefix"
    # --ignore-installed: without it pip uninstalls the project's own (editable) install from the
    # running venv first, and `make demo` then finds no `m3mon` after `make test`.
    _run(sys.executable, "-m", "pip", "install", "--no-deps", "--no-compile", "--ignore-installed", "-q",
         "--prefix", str(prefix), str(wheel))  # fmt: skip
    return prefix


def test_the_venv_keeps_its_console_script(installed: Path) -> None:
    """Installing the wheel elsewhere leaves this venv's `m3mon` working (make test, then make demo)."""
    script = Path(sys.executable).parent / "m3mon"
    assert installed.is_dir() and script.exists()
    proc = subprocess.run([str(script), "--help"], capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0 and "check-config" in proc.stdout


def _env(prefix: Path) -> dict[str, str]:
    purelib = sysconfig.get_path("purelib", vars={"base": str(prefix), "platbase": str(prefix)})
    env = {k: v for k, v in os.environ.items() if k != "M3MON_MIGRATIONS"}
    return env | {"PYTHONPATH": purelib, "PYTHONUSERBASE": str(prefix), "PYTHONNOUSERSITE": "1"}


def test_the_wheel_ships_the_migrations(installed: Path) -> None:
    versions = installed / "share" / "m3-monitor" / "migrations" / "versions"
    assert {p.name for p in versions.glob("*.py")} == {
        p.name for p in (REPO / "migrations" / "versions").glob("*.py")
    }


def test_the_installed_package_finds_and_applies_them(installed: Path, tmp_path: Path) -> None:
    code = "import monitor, monitor.store.migrate as m; print(monitor.__file__); print(m.migrations_dir())"
    module, found = _run(sys.executable, "-c", code, env=_env(installed), cwd=tmp_path).split()
    assert Path(module).is_relative_to(installed), module  # the installed copy, not this checkout
    assert Path(found) == installed / "share" / "m3-monitor" / "migrations"
    config = tmp_path / "monitor.yaml"
    db = tmp_path / "m3mon.db"
    config.write_text((REPO / "examples" / "monitor.yaml").read_text().replace(
        "sqlite:///m3mon.db", f"sqlite:///{db}"))  # fmt: skip
    code = f"import sys; from monitor.cli import main; sys.exit(main(['db', 'upgrade', '-c', '{config}']))"
    _run(sys.executable, "-c", code, env=_env(installed), cwd=tmp_path)
    tables = set(inspect(create_engine(f"sqlite:///{db}")).get_table_names())
    assert set(Base.metadata.tables) <= tables


def test_a_missing_environment_names_where_it_looked(tmp_path: Path) -> None:
    env = os.environ | {"M3MON_MIGRATIONS": str(tmp_path / "nowhere")}
    code = "from monitor.store.migrate import migrations_dir; migrations_dir()"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env,
                          check=False)  # fmt: skip
    assert proc.returncode != 0 and f"looked in {tmp_path / 'nowhere'}" in proc.stderr
