"""A relative SQLite path in a config names a file beside the config, whatever the working
directory, and commands that only read never create it (issue 26, finding 6: run from another
folder, ``m3mon slo status`` created an empty ``m3mon.db`` there and reported nothing)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from monitor.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "monitor.yaml"
READ_ONLY = [
    ["slo", "status", "-c", "{cfg}"],
    ["budget", "gate", "-c", "{cfg}", "--class", "interactive-32k"],
    ["contract", "-c", "{cfg}"],
    ["report", "-c", "{cfg}", "-o", "{out}"],
    ["profile", "-c", "{cfg}", "--class", "interactive-32k", "--since", "1d", "-o", "{out}/p.yaml"],
]


@pytest.fixture
def layout(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Path, Path]:
    """The example config (``sqlite:///m3mon.db``) in ``conf/``; the working directory ``work/``."""
    conf, work = tmp_path / "conf", tmp_path / "work"
    conf.mkdir()
    work.mkdir()
    assert "url: sqlite:///m3mon.db\n" in EXAMPLE.read_text()
    (conf / "monitor.yaml").write_text(EXAMPLE.read_text())
    monkeypatch.chdir(work)
    monkeypatch.delenv("M3MON_STORAGE_URL", raising=False)
    return conf, work


@pytest.mark.parametrize("command", READ_ONLY, ids=lambda c: c[0])
def test_reading_a_store_that_does_not_exist_creates_nothing(
    layout: tuple[Path, Path], command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    conf, work = layout
    args = [
        a.replace("{out}", str(work / "out")).replace("{cfg}", str(conf / "monitor.yaml")) for a in command
    ]
    assert main(args) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].endswith(
        f"no store at {conf / 'm3mon.db'} (run `m3mon db upgrade -c CONFIG` to create it)"
    ), err
    assert sorted(os.listdir(conf)) == ["monitor.yaml"] and not (work / "m3mon.db").exists()


def test_the_store_is_beside_the_config(
    layout: tuple[Path, Path], capsys: pytest.CaptureFixture[str]
) -> None:
    conf, work = layout
    cfg = str(conf / "monitor.yaml")
    assert main(["db", "current", "-c", cfg]) == 1 and not (conf / "m3mon.db").exists()
    assert main(["db", "upgrade", "-c", cfg]) == 0
    assert f"sqlite:///{conf / 'm3mon.db'}: at revision" in capsys.readouterr().out
    assert (conf / "m3mon.db").exists() and os.listdir(work) == []
    assert main(["slo", "status", "-c", cfg]) == 0
