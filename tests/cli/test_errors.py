"""Every ``m3mon`` failure is one line naming what failed, and no password is ever shown.

Every sub-command runs in its own (forked) process, see tests/cli/forked.py, with a PostgreSQL
storage URL holding a password, given in the configuration file and in ``M3MON_STORAGE_URL``:
pointing at a port nobody listens on, at the real throwaway cluster with a wrong password, and
(the whole success path) with the right one. All of stdout and stderr of every run is searched for
the password; failures must be one line on stderr with the documented exit status and no traceback.
"""

from __future__ import annotations

import importlib
import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import unquote

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.pool import NullPool

from monitor.cli import COMMANDS
from monitor.store.engine import display_url
from tests.cli.forked import Result, run
from tests.support.postgres import PostgresCluster, free_port
from tests.support.postgres_auth import ROLE, PasswordRole

pytestmark = pytest.mark.timeout(120)

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "monitor.yaml"
UNREACHABLE_SECRET = "Unreach%2Fable-S3cret"  # percent-encoded: neither form may appear
WRONG_SECRET = "Wr0ng-S3cret-pw"
LOG_LINE = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d+ (DEBUG|INFO|WARNING|ERROR|CRITICAL) ")


@dataclass(frozen=True)
class Target:
    url: str
    secrets: tuple[str, ...]
    reason: str


@dataclass(frozen=True)
class Setup:
    """A configuration file and the environment that give one storage URL (from the file or the env)."""

    config: str
    env: dict[str, str | None]
    work: Path


@pytest.fixture(scope="module", autouse=True)
def preloaded() -> None:
    """Import what the commands import, once: each forked run then starts in a fraction of a second."""
    for name in ("generate.output", "report.generate", "report.delivery", "service.service", "probes.runner",
                 "demo.story", "sim.app", "store.migrate", "scrape.collector"):  # fmt: skip
        importlib.import_module(f"monitor.{name}")


@pytest.fixture(scope="module")
def targets(pg_password_role: PasswordRole) -> dict[str, Target]:
    unreachable = f"postgresql+psycopg://m3mon:{UNREACHABLE_SECRET}@127.0.0.1:{free_port()}/m3mon"
    return {
        "unreachable": Target(
            unreachable, (UNREACHABLE_SECRET, unquote(UNREACHABLE_SECRET)), "connection refused"
        ),
        "wrong password": Target(
            pg_password_role.url(WRONG_SECRET),
            (WRONG_SECRET,),
            f'password authentication failed for user "{ROLE}"',
        ),
    }


def write_config(path: Path, storage_url: str) -> str:
    """The example configuration with its endpoints on a closed port, its own exporter port and
    spool folder, and ``storage_url``."""
    closed, text_ = free_port(), EXAMPLE.read_text()
    for port in (8000, 8001, 8002):
        text_ = text_.replace(f"base_url: http://127.0.0.1:{port}", f"base_url: http://127.0.0.1:{closed}")
    text_ = text_.replace(
        "url: sqlite:///m3mon.db", f'url: "{storage_url}"\n  buffer_dir: {path.parent / "spool"}'
    )
    text_ = text_.replace("listen: 127.0.0.1:9464", f"listen: 127.0.0.1:{free_port()}")
    path.write_text(text_)
    return str(path)


def setup(tmp_path: Path, url: str, source: str) -> Setup:
    if source == "config":
        return Setup(
            write_config(tmp_path / "monitor.yaml", url), {"M3MON_STORAGE_URL": None}, tmp_path / "runs"
        )
    plain = write_config(tmp_path / "monitor.yaml", f"sqlite:///{tmp_path / 'unused.db'}")
    return Setup(plain, {"M3MON_STORAGE_URL": url}, tmp_path / "runs")


def store_commands(cfg: str, out: Path) -> list[list[str]]:
    return [
        ["db", "upgrade", "-c", cfg],
        ["db", "current", "-c", cfg],
        ["slo", "status", "-c", cfg],
        ["slo", "evaluate", "-c", cfg],
        ["budget", "gate", "-c", cfg, "--class", "interactive-32k"],
        ["report", "-c", cfg, "-o", str(out / "report")],
        ["run", "-c", cfg, "--duration", "2"],
        ["run", "-c", cfg, "--upgrade", "--duration", "2"],
    ]


def command_name(argv: list[str]) -> str:
    return " ".join(["m3mon", *argv[: 2 if argv[0] in ("db", "slo", "budget") else 1]])


def assert_secret_free(result: Result, secrets: tuple[str, ...]) -> None:
    for secret in secrets:
        assert secret not in result.output, (
            f"m3mon {' '.join(result.argv)} printed the password:\n{result.output}"
        )


def assert_one_line_failure(result: Result, status: int, line: str | re.Pattern[str]) -> None:
    """Exit ``status``; stderr is log lines at most, then the failure as its only other line."""
    assert "Traceback" not in result.output, result.output
    assert result.status == status, (result.argv, result.status, result.output)
    lines = [x for x in result.err.splitlines() if x.strip()]
    assert lines and all(LOG_LINE.match(x) for x in lines[:-1]), result.err
    last = lines[-1]
    assert line.fullmatch(last) if isinstance(line, re.Pattern) else last == line, (last, line)


@pytest.mark.parametrize("source", ["config", "env"])
@pytest.mark.parametrize("target", ["unreachable", "wrong password"])
def test_store_commands_fail_in_one_line_without_the_password(
    targets: dict[str, Target], source: str, target: str, tmp_path: Path
) -> None:
    t = targets[target]
    s = setup(tmp_path, t.url, source)
    shown = display_url(t.url)
    assert "***" in shown
    for argv in store_commands(s.config, tmp_path):
        result = run(argv, s.env, s.work)
        assert_secret_free(result, t.secrets)
        if argv == ["run", "-c", s.config, "--duration", "2"] and target == "unreachable":
            # run rides out a database that does not answer (spooling, /-/ready 503): it starts, and
            # says so without the password (tests/service/test_run_store_away.py: the whole story)
            assert result.status == 0 and "Traceback" not in result.output, result.output
            assert f"the store is away at start ({shown}: connection refused)" in result.err, result.err
            continue
        assert_one_line_failure(
            result, 1, f"{command_name(argv)}: database unreachable: {shown} ({t.reason})"
        )
        if argv[0] != "run":
            assert len(result.err.splitlines()) == 1, result.err


def other_commands(
    cfg: str, out: Path, closed: int
) -> list[tuple[list[str], int, str | re.Pattern[str] | None]]:
    """(argv, exit status, the failure line or None for a success) of every command that does not
    need the database, and of bad input to the ones that do."""
    return [
        (["check-config", cfg], 0, None),
        (["generate", "-c", cfg, "-o", str(out / "generated")], 0, None),
        (["probe", "-c", cfg, "--once", "--no-jitter", "--class", "interactive-32k"], 1, None),
        (["scrape", f"http://127.0.0.1:{closed}/metrics", "--timeout", "2"], 1,
         re.compile(r"m3mon scrape: connect_error: .*")),
        (["sim", "--faults", '{"nope": 1}'], 2, re.compile(r"m3mon sim: .*nope.*")),
        (["slo", "status", "-c", cfg, "--at", "yesterday"], 2,
         "m3mon slo status: --at: expected an ISO 8601 time or Unix seconds, got 'yesterday'"),
        (["report", "-c", cfg, "--week", "2026-W99", "-o", str(out / "r")], 2, re.compile(r"m3mon report: --week: .*")),
        (["db", "upgrade"], 2, re.compile(r"m3mon db upgrade: the following arguments are required: -c/--config .*")),
        (["openslo", "export", "-c", cfg, "-o", str(out / "openslo")], 0, None),
        (["budget", "gate", "-c", cfg, "--class", "nope"], 2,
         re.compile(r"m3mon budget gate: --class: unknown request class 'nope'; known: interactive-32k, .*")),
        (["demo", "--config", str(out / "absent.yaml"), "--out", str(out / "demo")], 2, None),
        (["profile", "-c", cfg, "--class", "interactive-32k"], 1, re.compile(r"m3mon profile: database unreachable: .*")),
        (["replay", "-c", cfg, "--class", "interactive-32k", "--profile", str(out / "p.yaml"), "--duration", "soon"], 2,
         re.compile(r"m3mon replay: --duration: .*")),
        (["contract", "-c", cfg], 1, re.compile(r"m3mon contract: database unreachable: .*")),
        (["compare", "-c", cfg, "--endpoint", "m3-interactive", "--before", "run:1", "--after", "run:2"], 1,
         re.compile(r"m3mon compare: database unreachable: .*")),
        (["fleet", "plan", "-c", cfg, "--shards", "0"], 2, re.compile(r"m3mon fleet( plan)?: --shards: .*")),
        (["init", "--from", f"http://127.0.0.1:{closed}", "-o", str(out / "starter.yaml")], 1,
         re.compile(rf"m3mon init: http://127.0.0.1:{closed}: cannot read /metrics: connect_error: .*")),
        (["traces", "-c", cfg, "--slo", "interactive-32k/availability"], 1,
         re.compile(r"m3mon traces: database unreachable: .*")),
        (["maintenance", "list", "-c", cfg, "--class", "nope"], 2,
         re.compile(r"m3mon maintenance list: --class: unknown request class 'nope'; known: interactive-32k, .*")),
    ]  # fmt: skip


@pytest.mark.parametrize("source", ["config", "env"])
def test_every_other_command_never_shows_the_password(
    targets: dict[str, Target], source: str, tmp_path: Path
) -> None:
    t = targets["unreachable"]
    s = setup(tmp_path, t.url, source)
    runs = other_commands(s.config, tmp_path, free_port())
    assert {argv[0] for argv, _, _ in runs} | {"run"} == {c.replace("_", "-") for c in COMMANDS}
    for argv, status, line in runs:
        result = run(argv, s.env, s.work)
        assert_secret_free(result, t.secrets)
        assert "Traceback" not in result.output, result.output
        assert result.status == status, (argv, result.status, result.output)
        if line is not None:
            assert_one_line_failure(result, status, line)
            assert len(result.err.splitlines()) == 1, result.err
    summary = run(["check-config", s.config], s.env, s.work)
    assert f"storage: {display_url(t.url)};" in summary.out


def test_the_demo_with_an_unreachable_database_fails_in_one_line(
    targets: dict[str, Target], tmp_path: Path
) -> None:
    t = targets["unreachable"]
    result = run(
        ["demo", "--out", str(tmp_path / "demo")], {"M3MON_STORAGE_URL": t.url}, tmp_path / "runs", 60
    )
    assert_secret_free(result, t.secrets)
    assert_one_line_failure(
        result, 1, f"m3mon demo: database unreachable: {display_url(t.url)} (connection refused)"
    )


@pytest.fixture
def own_database(pg_password_role: PasswordRole, postgres_cluster: PostgresCluster) -> Iterator[str]:
    """A fresh database owned by the password-checked role; its URL with the right password."""
    name = f"pw_{uuid.uuid4().hex[:10]}"
    admin = create_engine(postgres_cluster.url, isolation_level="AUTOCOMMIT", poolclass=NullPool)
    try:
        with admin.connect() as conn:
            conn.execute(text(f'CREATE DATABASE "{name}" OWNER {ROLE}'))
        yield pg_password_role.url(database=name)
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
    finally:
        admin.dispose()


def test_the_right_password_is_never_shown_either(own_database: str, tmp_path: Path) -> None:
    """Not migrated, migrated, evaluated: every line that names the database hides the password."""
    from tests.support.postgres_auth import PASSWORD

    s = setup(tmp_path, own_database, "config")
    shown = display_url(own_database)
    steps: list[tuple[list[str], int]] = [
        (["slo", "status", "-c", s.config], 1),
        (["db", "current", "-c", s.config], 1),
        (["db", "upgrade", "-c", s.config], 0),
        (["db", "current", "-c", s.config], 0),
        (["slo", "evaluate", "-c", s.config], 0),
        (["slo", "status", "-c", s.config, "--json"], 0),
    ]
    results = [run(argv, s.env, s.work) for argv, _ in steps]
    for result, (argv, status) in zip(results, steps, strict=True):
        assert_secret_free(result, (PASSWORD,))
        assert result.status == status and "Traceback" not in result.output, (argv, result.output)
    assert results[0].err == (
        f"m3mon slo status: database not migrated: {shown} (no m3mon tables; run `m3mon db upgrade -c CONFIG`)\n"
    )
    assert results[1].out.startswith(f"{shown}: not migrated")
    assert results[2].out.startswith(f"{shown}: at revision ")


def test_a_debug_log_has_the_traceback_but_not_the_password(
    targets: dict[str, Target], tmp_path: Path
) -> None:
    t = targets["wrong password"]
    s = setup(tmp_path, t.url, "config")
    result = run(["--log-level", "DEBUG", "slo", "status", "-c", s.config], s.env, s.work)
    assert_secret_free(result, t.secrets)
    assert result.status == 1 and "Traceback" in result.err  # logged at DEBUG, on purpose
    assert (
        result.err.splitlines()[-1]
        == f"m3mon slo status: database unreachable: {display_url(t.url)} ({t.reason})"
    )


def test_the_console_script_prints_the_same_line(targets: dict[str, Target], tmp_path: Path) -> None:
    """The real entry point, in a fresh interpreter (the other tests fork one that has imported m3mon)."""
    t = targets["unreachable"]
    s = setup(tmp_path, t.url, "env")
    proc = subprocess.run(
        [sys.executable, "-m", "monitor", "slo", "status", "-c", s.config],
        env={"PATH": "/usr/bin:/bin", "M3MON_STORAGE_URL": t.url},
        cwd=EXAMPLE.parents[1],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert (proc.returncode, proc.stdout) == (1, "")
    assert (
        proc.stderr == f"m3mon slo status: database unreachable: {display_url(t.url)} (connection refused)\n"
    )
