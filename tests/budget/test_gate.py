"""``m3mon budget gate``: exit codes and reasons on a real store (SQLite and PostgreSQL).

The classes and their hand-computed budgets are in :mod:`tests.budget.scenarios`:
steady has 1/6 of its budget left (policy: freeze below 20 %), ramp 7/12 (below 10 %, page burn
ignored), burst 1/6 with a page-level burn (default policy: 10 %, freeze on page burn), quiet no data.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.cli import main
from tests.budget import scenarios as sc


@pytest.fixture
def config(db_url: str, tmp_path: Path) -> Path:
    path = tmp_path / "monitor.yaml"
    path.write_text(sc.CONFIG + f"storage: {{url: '{db_url}'}}\n", encoding="utf-8")
    return path


def _gate(
    config: Path, cls: str, capsys: pytest.CaptureFixture[str], at: float = sc.AT, *more: str
) -> tuple[int, str]:
    status = main(["budget", "gate", "-c", str(config), "--class", cls, "--at", str(at), *more])
    out = capsys.readouterr()
    return status, (out.out + out.err).strip()


def test_budget_below_the_policy_limit_freezes(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _gate(config, "steady", capsys) == (
        1,
        "frozen: steady: avail has 16.7% of its 30d error budget left (policy: freeze below 20 %)",
    )


def test_enough_budget_and_no_page_burn_passes(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert _gate(config, "ramp", capsys) == (
        0,
        "ok: ramp: every SLO has at least 10 % of its budget left (lowest: avail 58.3%)",
    )


def test_a_page_level_burn_freezes_under_the_default_policy(
    config: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _gate(config, "burst", capsys) == (
        1,
        "frozen: burst: avail is burning its budget at page level (policy: freeze on page burn)",
    )
    # twenty hours earlier the same class was healthy (whole budget left, nothing burning)
    assert _gate(config, "burst", capsys, at=sc.AT - 20 * 3600) == (
        0,
        "ok: burst: every SLO has at least 10 % of its budget left and no page-level burn (lowest: avail 100.0%)",
    )


def test_no_data_freezes_unless_allowed(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # a class the store has never seen: the gate fails closed (it said "ok" before)
    assert _gate(config, "quiet", capsys) == (
        1,
        "frozen: quiet: no events of quiet in the store (is `m3mon run` writing to it?)",
    )
    assert _gate(config, "quiet", capsys, sc.AT, "--allow-stale") == (
        0,
        "ok: quiet: every SLO has at least 10 % of its budget left and no page-level burn; 1 SLO(s) without data",
    )


def test_a_stale_store_freezes(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    # ramp passes at AT (above); nine days later nothing new was written: the budget is not known
    later = sc.AT + 9 * 86400 + 2 * 3600
    assert _gate(config, "ramp", capsys, later) == (
        1,
        "frozen: ramp: stale store: the newest event of ramp is 9d 2h old (fresh within 1h; "
        "is `m3mon run` writing to it?)",
    )
    assert _gate(config, "ramp", capsys, later, "--fresh-within", "10d")[0] == 0
    assert _gate(config, "ramp", capsys, later, "--allow-stale")[0] == 0
    # an hour's slack: the newest event at AT still vouches for AT + 1h, not for a minute more
    assert _gate(config, "ramp", capsys, sc.AT + 3600)[0] == 0
    assert _gate(config, "ramp", capsys, sc.AT + 3660)[0] == 1
    status, text = _gate(config, "ramp", capsys, sc.AT, "--fresh-within", "soon")
    assert status == 2 and "--fresh-within: expected a duration" in text


def test_an_unknown_class_is_a_usage_error(config: Path, capsys: pytest.CaptureFixture[str]) -> None:
    status, text = _gate(config, "nope", capsys)
    assert status == 2 and "--class: unknown request class 'nope'; known: steady, ramp, burst, quiet" in text


def test_a_bad_config_is_exit_2_and_an_unmigrated_store_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(sc.CONFIG.replace("freeze_below: 20", "freeze_below: 120"), encoding="utf-8")
    status, text = _gate(bad, "steady", capsys)
    assert status == 2 and "budget_policy.freeze_below" in text
    empty = tmp_path / "empty.yaml"
    empty.write_text(sc.CONFIG + f"storage: {{url: 'sqlite:///{tmp_path / 'empty.db'}'}}\n", encoding="utf-8")
    status, text = _gate(empty, "steady", capsys)
    assert status == 1 and f"no store at {tmp_path / 'empty.db'}" in text
