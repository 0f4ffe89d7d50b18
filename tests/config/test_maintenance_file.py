"""The maintenance file: read beside the config, checked against it, errors with file and line."""

from __future__ import annotations

from pathlib import Path

import pytest

from monitor.errors import ConfigError
from monitor.model import load_model

CONFIG = """version: m3mon/v1
endpoints:
  - name: pool-a
    base_url: http://127.0.0.1:8000
    model: MiniMaxAI/MiniMax-M3
    classes: [chat-32k]
request_classes:
  - name: chat-32k
    max_context_tokens: 32768
    probes: [chat]
    slos:
      - {name: availability, sli: availability, objective: 99.9}
maintenance:
  - name: in-config
    start: 2026-12-06T02:00:00Z
    duration: 1h
    classes: [chat-32k]
maintenance_file: planned.yaml
"""


def _config(tmp_path: Path, planned: str | None) -> Path:
    (tmp_path / "monitor.yaml").write_text(CONFIG)
    if planned is not None:
        (tmp_path / "planned.yaml").write_text(planned)
    return tmp_path / "monitor.yaml"


def test_windows_from_the_config_and_the_file_both_apply(tmp_path: Path) -> None:
    planned = "version: m3mon/v1\nmaintenance:\n  - {name: from-file, start: 2026-12-07T03:00:00Z, end: 2026-12-07T03:30:00Z, endpoints: [pool-a]}\n"
    model = load_model(_config(tmp_path, planned))
    assert [w.name for w in model.maintenance.windows] == ["in-config", "from-file"]
    assert model.maintenance_file == str(tmp_path / "planned.yaml")
    assert model.maintenance.excluding("chat-32k", "pool-a", 1_796_613_300.0) == "from-file"  # 03:15Z


def test_a_missing_file_means_no_windows_planned_yet(tmp_path: Path) -> None:
    model = load_model(_config(tmp_path, None))
    assert [w.name for w in model.maintenance.windows] == ["in-config"]


@pytest.mark.parametrize(
    ("planned", "message"),
    [
        ("version: m3mon/v1\nmaintenance:\n  - name: in-config\n    start: 2026-12-08T00:00:00Z\n"
         "    duration: 1h\n    classes: [chat-32k]\n",
         ":3: maintenance[0].name: duplicate maintenance window 'in-config'"),
        ("version: m3mon/v1\nmaintenance:\n  - name: x\n    start: 2026-12-08T00:00:00Z\n"
         "    duration: 1h\n    endpoints: [pool-z]\n",
         ":6: maintenance[0].endpoints[0]: unknown endpoint 'pool-z'; known: pool-a"),
        ("version: m3mon/v1\nmaintenance:\n  - name: x\n    start: tomorrow\n    duration: 1h\n"
         "    classes: [chat-32k]\n", ":4: maintenance[0].start: "),
        ("version: m3mon/v2\nmaintenance: []\n", ":1: version: "),
        ("- just a list\n", ": expected a mapping with 'version: m3mon/v1' and 'maintenance:'"),
    ],
)  # fmt: skip
def test_a_bad_file_names_itself_the_line_and_the_field(tmp_path: Path, planned: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_model(_config(tmp_path, planned))
    assert info.value.problems[0].startswith(f"{tmp_path / 'planned.yaml'}{message}"), info.value.problems
