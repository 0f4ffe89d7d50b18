"""A small report store for one test: the config beside a migrated SQLite file, ops written
through the store's own write path, and the week 2026-W48 rendered from it."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path

from monitor.model import Model, load_model
from monitor.report import generate
from monitor.report.data import Period
from monitor.store import Store
from monitor.store.migrate import upgrade
from monitor.store.ops import Op, endpoints_op


def one_class(timezone: str = "UTC") -> str:
    """The smallest report config: one endpoint serving one class with a probe availability SLO."""
    return f"""\
version: m3mon/v1
endpoints:
  - {{name: ep, base_url: "http://127.0.0.1:9", backend: vllm, model: m, classes: [chat]}}
request_classes:
  - name: chat
    max_context_tokens: 32768
    probes: [chat]
    slos:
      - {{name: availability, sli: availability, objective: 99, source: probes}}
report: {{timezone: {timezone}}}
"""


WEEK = Period("2026-W48", datetime(2026, 11, 23, tzinfo=UTC), datetime(2026, 11, 30, tzinfo=UTC))
NOW = datetime(2026, 12, 1, tzinfo=UTC)


def stored(folder: Path, config: str, ops: Callable[[Model], Sequence[Op]]) -> tuple[Model, str]:
    """``config`` as ``folder/monitor.yaml``, its model, and the URL of a migrated store beside it
    holding the model's endpoints and ``ops(model)``."""
    (folder / "monitor.yaml").write_text(config)
    model = load_model(folder / "monitor.yaml")
    url = f"sqlite:///{folder / 'report.db'}"
    upgrade(url)
    store = Store(url)
    try:
        store.apply([endpoints_op(model.endpoints), *ops(model)])
    finally:
        store.close()
    return model, url


def rendered(model: Model, url: str, week: Period = WEEK) -> generate.Rendered:
    """The report of ``week`` from the store at ``url``, in every format."""
    store = Store(url)
    try:
        return generate.render(generate.build(model, store, week, NOW))
    finally:
        store.close()
