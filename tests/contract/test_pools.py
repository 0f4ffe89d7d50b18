"""``check-config`` warns when a class marked ``dedicated_pool`` shares its pool; the example does not."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from monitor.cli import main
from tests.support.configs import service_sections

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "monitor.yaml"
AVAILABILITY = "slos: [{name: availability, sli: availability, objective: 99, source: probes}]"


def test_a_dedicated_class_on_a_shared_pool_is_a_warning(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "m3mon.yaml"
    path.write_text(textwrap.dedent(f"""\
        version: m3mon/v1
        endpoints:
          - {{name: shared, base_url: "http://127.0.0.1:9", model: m, classes: [chat, images]}}
          - {{name: own, base_url: "http://127.0.0.1:9", model: m, classes: [long]}}
        request_classes:
          - {{name: chat, max_context_tokens: 4096, dedicated_pool: true, probes: [chat], {AVAILABILITY}}}
          - {{name: images, max_context_tokens: 4096, probes: [image], {AVAILABILITY}}}
          - {{name: long, max_context_tokens: 4096, dedicated_pool: true, probes: [chat], {AVAILABILITY}}}
        """) + service_sections(tmp_path, spool=False))  # fmt: skip
    assert main(["check-config", str(path)]) == 0  # a warning, not an error
    lines = [line for line in capsys.readouterr().out.splitlines() if "dedicated_pool" in line]
    assert lines == [
        "warning: chat: dedicated_pool is true but its pool shared also serves images; the pool's token "
        "histograms mix their traffic into this class's learned profile and context ceiling, so m3mon "
        "profile should use its probe runs instead: set dedicated_pool: false, or give the class its own "
        "endpoint"
    ]


def test_the_example_config_marks_only_pools_of_one_class_dedicated(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["check-config", str(EXAMPLE)]) == 0
    assert "dedicated_pool" not in capsys.readouterr().out
