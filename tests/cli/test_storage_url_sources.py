"""A database URL of an unsupported database is a configuration error wherever it enters: the file's
``storage.url``, ``M3MON_STORAGE_URL`` and ``report --db`` (issue 26, finding 6: the last two said
"internal error: ModuleNotFoundError: No module named 'MySQLdb'"). One line naming where it came
from, exit 2, no password shown."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.forked import run

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "monitor.yaml"
MYSQL = "mysql://m3mon:hunter2@db:3306/m3mon"
PROBLEM = "expected a sqlite:/// or postgresql:// URL, got 'mysql://***@db:3306/m3mon'"


@pytest.mark.parametrize(
    "argv", [["slo", "status", "-c", str(EXAMPLE)], ["db", "upgrade", "-c", str(EXAMPLE)]]
)
def test_the_environment_url_is_checked_as_the_file_is(argv: list[str], tmp_path: Path) -> None:
    result = run(argv, {"M3MON_STORAGE_URL": MYSQL}, tmp_path)
    assert result.status == 2, result.output
    assert result.err == f"m3mon: configuration error\nM3MON_STORAGE_URL: {PROBLEM}\n"
    assert "hunter2" not in result.output


def test_a_db_option_is_checked_as_the_file_is(tmp_path: Path) -> None:
    argv = ["report", "-c", str(EXAMPLE), "--db", MYSQL, "-o", str(tmp_path / "out")]
    result = run(argv, {"M3MON_STORAGE_URL": None}, tmp_path)
    assert result.status == 2, result.output
    assert result.err == f"m3mon: configuration error\n--db: {PROBLEM}\n"
    assert "hunter2" not in result.output and not (tmp_path / "out").exists()
