"""An ``api_key_env`` naming an unset variable is a warning at check-config, on stderr of the
commands that contact the endpoint (probe, replay, contract --import/--check) and in ``m3mon
run``'s log, in one wording (issue 26, finding 6: it said nothing, and every scrape and probe then
failed as a 401)."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from monitor.cli import main
from tests.cli.forked import run
from tests.e2e.servers import free_port
from tests.support.configs import service_sections

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


def _keyed_config(folder: Path) -> Path:
    """One endpoint on a port nothing listens on, its key in ``M3_TEST_UNSET_KEY``."""
    path = folder / "m3mon.yaml"
    path.write_text(textwrap.dedent(f"""\
        version: m3mon/v1
        endpoints:
          - {{name: pool, base_url: "http://127.0.0.1:{free_port()}", model: m, classes: [small],
             api_key_env: M3_TEST_UNSET_KEY}}
        request_classes:
          - name: small
            max_context_tokens: 4096
            probes: [chat]
            probe: {{interval: 30s, timeout: 2s}}
            slos:
              - {{name: availability, sli: availability, objective: 99, source: probes}}
        """) + service_sections(folder))  # fmt: skip
    return path


WARNING = (
    "warning: endpoint pool: api_key_env M3_TEST_UNSET_KEY is not set in this environment "
    "(scrapes and probes will send no API key)"
)


def test_probe_warns_on_stderr(tmp_path: Path) -> None:
    result = run(["probe", "-c", str(_keyed_config(tmp_path)), "--once", "--no-jitter"],
                 {"M3_TEST_UNSET_KEY": None}, tmp_path)  # fmt: skip
    assert result.status == 1, result.output  # the endpoint is down: the probe fails, as before
    assert f"m3mon probe: {WARNING}" in result.err.splitlines()
    assert "api_key_env" not in result.out  # stdout stays the verdict table
    result = run(["probe", "-c", str(_keyed_config(tmp_path)), "--once", "--no-jitter"],
                 {"M3_TEST_UNSET_KEY": "k"}, tmp_path)  # fmt: skip
    assert "api_key_env" not in result.output


def test_run_logs_the_warning_at_start(tmp_path: Path) -> None:
    config = _keyed_config(tmp_path)
    argv = ["run", "-c", str(config), "--upgrade", "--duration", "1", "--listen", f"127.0.0.1:{free_port()}"]
    result = run(argv, {"M3_TEST_UNSET_KEY": None, "M3MON_STORAGE_URL": None}, tmp_path)
    assert result.status == 0, result.output
    logged = [line for line in result.err.splitlines() if "api_key_env" in line]
    assert len(logged) == 1 and logged[0].endswith(WARNING.removeprefix("warning: ")), result.err
    assert " WARNING " in logged[0]
