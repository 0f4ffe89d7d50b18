"""The report's error-budget section, from the scenario store (answers from tests/budget/scenarios.py)."""

from __future__ import annotations

from sqlalchemy.orm import Session

from monitor.report import budget
from monitor.report.events import Windows
from monitor.report.markdown import escape, table
from monitor.store import Store
from tests.budget import scenarios as sc


def test_section_states_the_policy_and_the_projection_per_slo(db_url: str) -> None:
    model = sc.model(db_url)
    store = Store(db_url)
    try:
        with Session(store.engine) as session:
            items = budget.collect_budget(model, Windows(session), sc.AT)
    finally:
        store.close()
    by_class = {c.name: c for c in items}
    assert by_class["steady"].frozen and by_class["burst"].frozen
    assert not by_class["ramp"].frozen and not by_class["quiet"].frozen
    assert by_class["steady"].verdict.startswith("frozen: steady: avail has 16.7%")
    # 86 400 s = 1d and 518 400 s = 6d; 378 000 s = 4d 9h and 3 628 800 s = 42d; quiet: no events
    assert [(c.name, c.slos[0].shown, c.slos[0].alerting) for c in items] == [
        ("steady", ("1d", "6d"), True),
        ("ramp", ("4d 9h", "42d"), False),
        ("burst", ("6h", "6d"), False),  # R = 1/6: 432 000 s / burn 20 (1h), / burn 5/6 (1d)
        ("quiet", ("no data", "no data"), False),
    ]
    text = "\n".join(budget.markdown(items, escape, table))
    assert "| steady | avail | 1d | 6d | 7d (firing) |" in text
    assert budget.to_json(items)[3]["slos"][0]["time_to_exhaustion"] == {"1h": None, "1d": None}
