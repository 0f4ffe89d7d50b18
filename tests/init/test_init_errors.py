"""``m3mon init`` refuses as documented: an existing file without --force (exit 2), an endpoint
it cannot read (exit 1, the line names the URL), a page that is not vLLM's or SGLang's (exit 1)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from monitor.cli import main
from monitor.sim.harness import running_simulator
from tests.e2e.servers import free_port
from tests.e2e.stack import SIM
from tests.init.pages import models_doc, static_server

PAGE = (Path(__file__).resolve().parents[1] / "fixtures" / "metrics" / "vllm-0.13.0.metrics.txt").read_text()
MODEL = "MiniMaxAI/MiniMax-M3"


def _one_line(err: str) -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    return lines[0]


def test_an_existing_file_is_kept_without_force(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "m3mon.yaml"
    out.write_text("mine\n")
    with static_server(PAGE, models_doc(MODEL, 131072)) as url:
        assert main(["init", "--from", url, "-o", str(out)]) == 2
        line = _one_line(capsys.readouterr().err)
        assert str(out) in line and "--force" in line
        assert out.read_text() == "mine\n"
        assert main(["init", "--from", url, "-o", str(out), "--force"]) == 0
    assert out.read_text().startswith("# m3mon starter configuration")


def test_an_unreachable_url_is_one_line_naming_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    with static_server(PAGE, models_doc(MODEL, 131072)) as good:
        status = main(
            ["init", "--from", good, "--from", url, "-o", str(tmp_path / "m.yaml"), "--timeout", "5"]
        )
    assert status == 1
    assert url in _one_line(capsys.readouterr().err)
    assert not (tmp_path / "m.yaml").exists()


def test_a_page_of_another_server_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    other = "# TYPE process_open_fds gauge\nprocess_open_fds 12.0\n"
    with static_server(other, models_doc(MODEL, 131072)) as url:
        assert main(["init", "--from", url, "-o", str(tmp_path / "m.yaml")]) == 1
    line = _one_line(capsys.readouterr().err)
    assert f"{url}/metrics" in line and "not a vLLM or SGLang page" in line


@pytest.mark.parametrize("bad", ["10.0.0.5:8000", "ftp://host/metrics", "http://"])
def test_a_url_that_is_not_http_is_bad_usage(
    bad: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init", "--from", bad, "-o", str(tmp_path / "m.yaml")]) == 2
    assert bad in _one_line(capsys.readouterr().err)


def test_a_key_protected_server_needs_api_key_env(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "m.yaml"
    with running_simulator(**SIM, api_key="s3cret") as sim:
        assert main(["init", "--from", sim.base_url, "-o", str(out)]) == 1
        line = _one_line(capsys.readouterr().err)
        assert f"{sim.base_url}/v1/models" in line and "--api-key-env" in line
        monkeypatch.setenv("M3_KEY", "s3cret")
        assert main(["init", "--from", sim.base_url, "-o", str(out), "--api-key-env", "M3_KEY"]) == 0
    (endpoint,) = yaml.safe_load(out.read_text())["endpoints"]
    assert endpoint["api_key_env"] == "M3_KEY" and "s3cret" not in out.read_text()


@pytest.mark.parametrize("where", ["folder", "missing/m.yaml"])
def test_an_output_that_cannot_be_a_file_is_bad_usage(
    where: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "folder").mkdir()
    # the URL is never read: bad usage is found first
    assert main(["init", "--from", f"http://127.0.0.1:{free_port()}", "-o", str(tmp_path / where)]) == 2
    assert str(tmp_path / where) in _one_line(capsys.readouterr().err)
