"""A stall is named a stall: the alerts about streams or engines that stop say "stalled", not "slow".

The rules are the generators' own, for the example configuration plus the stall objective
docs/probes.md recommends (``{name: stall, sli: stall, threshold: 2s}``), as Prometheus reads them.
"""

from __future__ import annotations

import pytest
import yaml

from monitor import conventions as cv
from monitor.generate.operational_rules import operational_groups
from monitor.generate.slo_rules import slo_groups
from monitor.model import load_model
from tests.generate.conftest import EXAMPLE, REPO

STALL_SLO = {"name": "stall", "sli": "stall", "threshold": "2s", "objective": 99, "source": "probes"}


@pytest.fixture(scope="module")
def alerts(tmp_path_factory: pytest.TempPathFactory) -> list[dict[str, object]]:
    out = tmp_path_factory.mktemp("stall-names")
    doc = yaml.safe_load((REPO / EXAMPLE).read_text())
    klass = next(c for c in doc["request_classes"] if c["name"] == "interactive-32k")
    klass["slos"].append(STALL_SLO)
    config = out / "monitor.yaml"
    config.write_text(yaml.safe_dump(doc, sort_keys=False))
    model = load_model(config)
    groups = [*slo_groups(model), *operational_groups(model)]
    return [r for g in groups for r in g.render(model.alerting)["rules"] if "alert" in r]


def _summaries(alerts: list[dict[str, object]], name: str, **labels: str) -> list[str]:
    return [
        str(a["annotations"]["summary"])  # type: ignore[index]
        for a in alerts
        if a["alert"] == name and labels.items() <= a["labels"].items()  # type: ignore[union-attr]
    ]


def test_the_stall_slo_pages_as_stalled_not_slow(alerts: list[dict[str, object]]) -> None:
    for name in (cv.ALERT_BURN_PAGE, cv.ALERT_BURN_TICKET):
        (summary,) = _summaries(alerts, name, **{cv.L_CLASS: "interactive-32k", cv.L_SLO: "stall"})
        assert "stalled mid-response" in summary and "slow" not in summary.lower(), summary
        (ttft,) = _summaries(alerts, name, **{cv.L_CLASS: "interactive-32k", cv.L_SLO: "ttft-p95"})
        assert "stall" not in ttft, ttft  # only the stall SLO is called a stall


def test_the_engine_stall_alert_says_stalled(alerts: list[dict[str, object]]) -> None:
    (summary,) = _summaries(alerts, cv.ALERT_ENGINE_STALLED)
    assert "stalled" in summary and "slow" not in summary.lower(), summary
