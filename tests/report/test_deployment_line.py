"""Page one says what changed in the deployment (issue 24: "… and what changed in the deployment"):
one line per change naming its settings and the SLO whose attainment moved most across it, worded
by hand here from the definition in :func:`monitor.report.display.deployment_line` (and, for the
GPU driver, through a stored week rendered by the report itself)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path

from monitor.model import Model
from monitor.report.data import DeploymentChange, SLOChange
from monitor.report.display import deployment_line
from monitor.store import DeploymentFingerprint
from monitor.store.ops import Op, deployment_op
from tests.report.stores import WEEK, rendered, stored

AT = datetime(2026, 11, 26, 12, tzinfo=UTC)


def test_the_slo_that_moved_most_is_named_with_both_sides() -> None:
    dep = DeploymentChange("m3-repo", AT, (("vllm_version", "0.11.0", "0.12.0"),), (
        SLOChange("repo/ttft-p95", 0.99, 0.985), SLOChange("repo/queue-p95", 0.9412, 0.99125),
        SLOChange("repo/availability", None, 1.0)))  # fmt: skip
    assert deployment_line(dep, 24) == (
        "m3-repo changed at 2026-11-26 12:00: vllm_version 0.11.0 → 0.12.0; "
        "repo/queue-p95 94.120% in the 24h before, 99.125% after."
    )


def test_many_settings_are_counted_not_listed_and_an_unmoved_slo_is_said() -> None:
    changes = tuple((f"f{i}", "a", "b") for i in range(5))
    dep = DeploymentChange("ep", AT, changes, (SLOChange("c/availability", 1.0, 1.0),))
    assert deployment_line(dep, 6) == (
        "ep changed at 2026-11-26 12:00: f0 a → b, f1 a → b, f2 a → b and 2 more settings; "
        "no SLO's attainment moved in the 6h before and after it."
    )


def test_a_change_without_measured_slos_names_only_the_settings() -> None:
    dep = DeploymentChange("ep", AT, (("block_size", "16", "128"),), (SLOChange("c/a", None, 0.5),))
    assert deployment_line(dep, 24) == "ep changed at 2026-11-26 12:00: block_size 16 → 128."


GPU_CONFIG = """\
version: m3mon/v1
endpoints:
  - {name: ep-gpu, base_url: "http://127.0.0.1:9", backend: vllm, model: m, classes: [chat],
     gpu_exporter: {url: "http://127.0.0.1:9/metrics", kind: dcgm}}
request_classes:
  - {name: chat, max_context_tokens: 32768, probes: [chat],
     slos: [{name: a, sli: availability, objective: 99}]}
report: {timezone: UTC}
"""


def test_a_gpu_driver_upgrade_is_a_deployment_change_the_report_names(tmp_path: Path) -> None:
    """Issue 25: the GPU driver is part of the stored deployment; a driver upgrade alone (same vLLM,
    same config) is a change that page one names in words, and report.json by its field."""
    start = WEEK.start.timestamp()

    def ops(model: Model) -> list[Op]:
        def fp(driver: str) -> DeploymentFingerprint:
            return DeploymentFingerprint(vllm_version="0.11.0", block_size=128, gpu_model="NVIDIA H200",
                                         gpu_count=8, gpu_driver_version=driver)  # fmt: skip

        return [deployment_op("ep-gpu", fp("550.54"), start - 86400.0),
                deployment_op("ep-gpu", fp("560.35"), start + 3 * 86400.0 + 12 * 3600.0)]  # fmt: skip

    model, url = stored(tmp_path, GPU_CONFIG, ops)
    report = rendered(model, url)
    (dep,) = json.loads(report.json)["deployments"]
    assert dep["changes"] == [{"field": "gpu_driver_version", "before": "550.54", "after": "560.35"}]
    (line,) = [x for x in report.markdown.replace("\\", "").splitlines() if x.startswith("**Deployment:**")]
    assert line == "**Deployment:** ep-gpu changed at 2026-11-26 12:00: GPU driver 550.54 → 560.35."
