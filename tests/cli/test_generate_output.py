"""``m3mon generate -o DIR`` creates DIR, never a tree of missing parents (issue 26, finding 6: a
mistyped ``-o`` silently created every folder on the way)."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.cli import main

EXAMPLE = str(Path(__file__).resolve().parents[2] / "examples" / "monitor.yaml")


def test_a_missing_parent_is_refused_and_nothing_is_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    target = tmp_path / "typo" / "deep" / "out"
    assert main(["generate", "-c", EXAMPLE, "-o", str(target)]) == 2
    err = capsys.readouterr().err
    assert err == (
        f"m3mon generate: -o: {tmp_path / 'typo' / 'deep'} does not exist (generate creates DIR, not its parents)\n"
    )
    assert list(tmp_path.iterdir()) == []


def test_a_file_is_not_a_directory(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "f").write_text("x")
    assert main(["generate", "-c", EXAMPLE, "-o", str(tmp_path / "f")]) == 2
    assert capsys.readouterr().err == f"m3mon generate: -o: {tmp_path / 'f'} is not a directory\n"


def test_a_new_folder_in_an_existing_one_is_created(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["generate", "-c", EXAMPLE, "-o", str(tmp_path / "out")]) == 0
    assert (tmp_path / "out" / "alerts").is_dir()
