"""Page one says what changed in the deployment (issue 24: "… and what changed in the deployment"):
one line per change naming its settings and the SLO whose attainment moved most across it, worded
by hand here from the definition in :func:`monitor.report.display.deployment_line`."""

from __future__ import annotations

from datetime import UTC, datetime

from monitor.report.data import DeploymentChange, SLOChange
from monitor.report.display import deployment_line

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
