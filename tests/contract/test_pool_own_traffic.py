"""Each pool's own traffic sets its context-ceiling figures and advice, and no advice lowers a
pool's --max-model-len below the context ceiling of a class it serves.

* ``ext`` (max-model-len 524,288) serves ``extended`` (ceiling 524,288) alone: its probe runs are
  24,000 tokens, far under the ceiling, yet lowering the pool toward 24,000 would refuse the
  beyond-128K requests the class exists for (the demo's report once advised 49,560).
* ``wide`` is served by pools ``a`` and ``b``: its 100 runs on ``a`` are 1,000 tokens, its 100 on
  ``b`` 60,000. Its contract is on ``a`` (its first pool), so it shows ``a``'s traffic alone: every
  percentile 1,000 (the values written; any P99 of 100 equal values is that value).
"""

from __future__ import annotations

import re
import textwrap
from pathlib import Path

from sqlalchemy import insert

from monitor.contract.build import build_contract
from monitor.model import Model, load_model
from monitor.store.migrate import upgrade
from monitor.store.ops import endpoints_op
from monitor.store.store import Store
from monitor.store.tables import ProbeResultRow
from tests.support.configs import service_sections

END = 10 * 86400.0


def _model(folder: Path) -> Model:
    path = folder / "m3mon.yaml"
    path.write_text(textwrap.dedent("""\
        version: m3mon/v1
        endpoints:
          - {name: ext, base_url: "http://127.0.0.1:9", model: m, classes: [extended],
             deployment: {max_model_len: 524288}}
          - {name: a, base_url: "http://127.0.0.1:10", model: m, classes: [wide],
             deployment: {max_model_len: 131072}}
          - {name: b, base_url: "http://127.0.0.1:11", model: m, classes: [wide],
             deployment: {max_model_len: 131072}}
        request_classes:
          - {name: extended, max_context_tokens: 524288, dedicated_pool: true, probes: [chat],
             slos: [{name: availability, sli: availability, objective: 99, source: probes}]}
          - {name: wide, max_context_tokens: 131072, probes: [chat],
             slos: [{name: availability, sli: availability, objective: 99, source: probes}]}
        """) + service_sections(folder))  # fmt: skip
    upgrade(f"sqlite:///{folder}/m3mon.db")
    return load_model(path)


def _runs(endpoint: str, cls: str, prompt: int, output: int) -> list[dict[str, object]]:
    return [
        {"endpoint": endpoint, "request_class": cls, "kind": "chat", "started_at": END - 3600 - k * 60, "ok": True,
         "prompt_tokens": prompt, "completion_tokens": output, "extra": {}, "log": []}
        for k in range(100)
    ]  # fmt: skip


def test_each_pool_reads_its_own_traffic_and_keeps_every_ceiling(tmp_path: Path) -> None:
    model = _model(tmp_path)
    db = Store(model.storage.url)
    try:
        db.apply([endpoints_op(model.endpoints)])
        with db.session() as s:
            rows = (
                _runs("ext", "extended", 23_900, 100)
                + _runs("a", "wide", 900, 100)
                + _runs("b", "wide", 59_000, 1_000)
            )
            s.execute(insert(ProbeResultRow), rows)
            s.commit()
        with db.session() as s:
            contracts = {c.name: c for c in build_contract(s, model, END)}
    finally:
        db.close()
    wide = contracts["wide"].ceiling
    assert (wide.p50, wide.p95, wide.p99, wide.largest, wide.samples) == (1000, 1000, 1000, 1000, 100)
    for c in contracts.values():
        served = [e for e in model.endpoints if e.name == c.endpoint]
        floor = max(model.request_class(k).max_context_tokens for e in served for k in e.classes)
        for advice in c.ceiling.advice:
            for number in re.findall(r"not below (\d+)", advice):
                assert int(number) >= floor, advice
    assert not any("a lower --max-model-len," in a for a in contracts["extended"].ceiling.advice)
