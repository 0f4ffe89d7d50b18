"""``m3mon init --from`` the real simulator, through the real CLI: what it writes is accepted by
``m3mon check-config --metrics`` against the same simulators, every latency threshold is a bucket
edge the page serves (read with prometheus_client), and each model id and context ceiling is what
``/v1/models`` says. Three simulators: two at 128K (one pool) and one at 32K (another)."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path
from typing import Any

import pytest
import yaml

from monitor.cli import main
from monitor.model import load_model
from monitor.sim.harness import SimHandle, running_simulator
from tests.e2e.stack import SIM, m3mon
from tests.init.pages import FAMILIES, bucket_edges
from tests.support import localhttp

LENGTHS = (131072, 32768, 131072)


@pytest.fixture(scope="module")
def sims() -> Iterator[list[SimHandle]]:
    with ExitStack() as stack:
        yield [stack.enter_context(running_simulator(**SIM, max_model_len=n)) for n in LENGTHS]


@pytest.fixture(scope="module")
def written(sims: list[SimHandle], tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    out = tmp_path_factory.mktemp("init") / "m3mon.yaml"
    args = [a for s in sims for a in ("--from", s.base_url)]
    done = subprocess.run(m3mon("init", *args, "-o", str(out)), capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return out, done.stdout


def _card(sim: SimHandle) -> dict[str, Any]:
    card: dict[str, Any] = localhttp.get(f"{sim.base_url}/v1/models", timeout=5).json()["data"][0]
    return card


def test_models_and_ceilings_are_what_v1_models_says(
    sims: list[SimHandle], written: tuple[Path, str]
) -> None:
    doc = yaml.safe_load(written[0].read_text())
    by_url = {e["base_url"]: e for e in doc["endpoints"]}
    ceilings = {c["name"]: c["max_context_tokens"] for c in doc["request_classes"]}
    for sim in sims:
        card, ep = _card(sim), by_url[sim.base_url]
        assert ep["model"] == card["id"]
        assert [ceilings[c] for c in ep["classes"]] == [card["max_model_len"]]
        assert ep["deployment"]["max_model_len"] == card["max_model_len"]
    # one pool per context length: the two 128K servers share one class, the 32K one has its own
    assert by_url[sims[0].base_url]["classes"] == by_url[sims[2].base_url]["classes"]
    assert by_url[sims[0].base_url]["classes"] != by_url[sims[1].base_url]["classes"]
    assert len(doc["request_classes"]) == 2


def test_every_latency_threshold_is_a_served_bucket_edge(
    sims: list[SimHandle], written: tuple[Path, str]
) -> None:
    model = load_model(written[0])
    pages = {s.base_url: bucket_edges(localhttp.get(f"{s.base_url}/metrics", timeout=5).text) for s in sims}
    checked = 0
    for endpoint in model.endpoints:
        for cls in endpoint.classes:
            for slo in model.request_class(cls).slos:
                if slo.threshold is None:
                    continue
                assert slo.source == "server", slo  # the simulator serves every latency histogram
                edges = pages[endpoint.base_url]
                family = next(f for f in FAMILIES[slo.sli] if f in edges)
                assert slo.threshold in edges[family], (slo.id, slo.threshold, sorted(edges[family]))
                checked += 1
    assert checked == 2 * len(sims)  # a TTFT and an ITL SLO per endpoint


def test_probes_are_what_the_simulator_answers(written: tuple[Path, str]) -> None:
    # the simulator runs vLLM 0.33's --tool-call-parser (its page has the parser counter); it has
    # served no image yet and nothing shows a reasoning parser
    for cls in yaml.safe_load(written[0].read_text())["request_classes"]:
        assert cls["probes"] == ["chat", "tool_call"]


def test_every_choice_is_commented(written: tuple[Path, str]) -> None:
    lines = written[0].read_text().splitlines()
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("- {name:", "max_context_tokens:", "probes:", "probe:", "storage:")):
            assert lines[i - 1].lstrip().startswith("#"), f"no comment above {line!r}"


def test_check_config_with_metrics_passes_and_next_commands_are_printed(
    sims: list[SimHandle], written: tuple[Path, str], capsys: pytest.CaptureFixture[str]
) -> None:
    path, stdout = written
    command = next(
        line.strip() for line in stdout.splitlines() if line.strip().startswith("m3mon check-config")
    )
    assert all(f"={s.base_url}/metrics" in command for s in sims)
    assert any(line.strip() == f"m3mon run -c {path} --upgrade" for line in stdout.splitlines())
    assert f"m3mon generate -c {path}" in stdout
    assert main(command.split()[1:]) == 0  # the printed command, as the CLI runs it
    out = capsys.readouterr().out
    oks = [line for line in out.splitlines() if line.startswith("ok:") and "is a bucket edge of" in line]
    assert len(oks) == 2 * len(sims), out
    assert not [line for line in out.splitlines() if line.startswith(("error:", "warning:"))], out


def test_the_printed_generate_command_writes_the_stack_files(
    written: tuple[Path, str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path, stdout = written
    command = next(line.strip() for line in stdout.splitlines() if line.strip().startswith("m3mon generate"))
    args = command.split()[1:]
    args[args.index("-o") + 1] = str(tmp_path / "monitoring")
    assert main(args) == 0, capsys.readouterr().err
    classes = [c["name"] for c in yaml.safe_load(path.read_text())["request_classes"]]
    for cls in classes:  # one SLO rule file per class, naming each of its SLOs
        rules = (tmp_path / "monitoring" / "alerts" / f"slo-{cls}.rules.yml").read_text()
        assert all(f'slo="{name}"' in rules for name in ("availability", "ttft-p95", "itl-p95")), cls
