"""An ``api_key_env`` naming an unset variable is a warning at check-config (issue 26, finding 6:
it said nothing, and every scrape and probe then failed as a 401)."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.cli import main

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "monitor.yaml"


def test_an_unset_key_variable_is_named(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("M3_API_KEY")
    assert main(["check-config", str(EXAMPLE)]) == 0  # a warning, not an error
    warned = [line for line in capsys.readouterr().out.splitlines() if "api_key_env" in line]
    assert warned == [
        f"warning: endpoint {name}: api_key_env M3_API_KEY is not set in this environment "
        "(scrapes and probes will send no API key)"
        for name in ("m3-interactive", "m3-repo", "m3-extended")
    ]
    monkeypatch.setenv("M3_API_KEY", "")  # set but empty sends no key either
    assert main(["check-config", str(EXAMPLE)]) == 0
    assert capsys.readouterr().out.count("api_key_env M3_API_KEY is not set") == 3


def test_a_set_key_says_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["check-config", str(EXAMPLE)]) == 0
    assert "api_key_env" not in capsys.readouterr().out
