"""A burn-down line is never hidden by the chart's own labels: wherever an SLO's error budget sits
for the week — along the "at risk" line and through its name, just above or below "exhausted", at
the floor — its line crosses the whole panel (read from the pixels, tests/report/lines.py).

CI's demo run once drew a budget that ended the week at about a quarter left: the name of the
at-risk line was drawn over it and the PDF lost 14 % of that line."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from monitor.report import charts
from monitor.report.data import SeriesPoint, SLOSeries
from tests.report import lines

T0 = datetime(2026, 11, 23, tzinfo=UTC)
COLOURS = list(charts.PALETTE[:5])


def _flat(budget: float, attainment: float) -> SLOSeries:
    """A week of two-hourly points, budget and attainment constant (percent)."""
    points = tuple(
        SeriesPoint(T0 + timedelta(hours=h), attainment / 100, budget / 100, 10.0) for h in range(0, 168, 2)
    )
    return SLOSeries("chat", "availability", 0.99, points)


@pytest.mark.parametrize("budget", [100.0, 60.0, 30.0, 27.0, 25.0, 1.0, 0.0, -3.0, -100.0, -150.0])
def test_the_budget_line_crosses_its_labels(budget: float) -> None:
    png = charts.burn_down([_flat(budget, 99.0 + budget / 100)])
    assert png is not None
    img = lines.pixels(png)
    ((att, bud),) = lines.burn_panels(img)
    assert lines.coverage(img, bud, COLOURS) >= 0.99, budget
    assert lines.coverage(img, att, COLOURS) >= 0.99, budget


@pytest.mark.parametrize("attainment", [99.0, 99.05, 98.95])
def test_the_attainment_line_crosses_its_objective(attainment: float) -> None:
    """On (or a hair from) its dotted objective, the attainment line is still one solid line."""
    png = charts.burn_down([_flat(50.0, attainment)])
    assert png is not None
    img = lines.pixels(png)
    ((att, _),) = lines.burn_panels(img)
    assert lines.coverage(img, att, COLOURS) >= 0.99, attainment
