"""Issue 24: the KV-waste advice is the pool's. A pool's --max-model-len must fit every class it
serves, so a class on a pool that also serves larger requests is never told to lower it.

Pool ``shared`` (max-model-len 32,768) serves ``long``, whose 100 long-prompt probe runs are
23,900 + 100 = 24,000 tokens each, and ``small``, whose 100 chat runs are 100 + 21 = 121 tokens.
Pool ``own`` (max-model-len 131,072) serves ``solo`` (ceiling 32,768) alone: 100 chat runs of
200 + 50 = 250 tokens.
By hand (P99 by nearest rank; waste when max-model-len > 4 × the pool's largest P99):

* shared: the largest P99 is long's 24,000; 32,768 ≤ 96,000: no KV-waste advice for either class
  (small's own 121 alone would have been 271×: it gets a note naming long's traffic instead);
* own: 250, 131,072 > 1,000: solo is advised to lower it, 131,072 / 250 = 524×, never below its
  32,768-token ceiling (a lower --max-model-len would refuse requests the class allows);
* five real-traffic spans of 30,000 tokens on ``shared`` then size it (P99 30,000): small's note
  names that traffic.
"""

from __future__ import annotations

import textwrap
from pathlib import Path

from sqlalchemy import insert

from monitor.contract.build import build_contract
from monitor.model import Model, load_model
from monitor.store.migrate import upgrade
from monitor.store.ops import endpoints_op
from monitor.store.store import Store
from monitor.store.tables import ProbeResultRow, ServerSpanRow
from tests.support.configs import service_sections

END = 10 * 86400.0


def _model(folder: Path) -> Model:
    path = folder / "m3mon.yaml"
    path.write_text(textwrap.dedent("""\
        version: m3mon/v1
        endpoints:
          - {name: shared, base_url: "http://127.0.0.1:9", model: m, classes: [long, small],
             deployment: {max_model_len: 32768}}
          - {name: own, base_url: "http://127.0.0.1:10", model: m, classes: [solo],
             deployment: {max_model_len: 131072}}
        request_classes:
          - {name: long, max_context_tokens: 32768, probes: [chat],
             slos: [{name: availability, sli: availability, objective: 99, source: probes}]}
          - {name: small, max_context_tokens: 8192, probes: [chat],
             slos: [{name: availability, sli: availability, objective: 99, source: probes}]}
          - {name: solo, max_context_tokens: 32768, probes: [chat],
             slos: [{name: availability, sli: availability, objective: 99, source: probes}]}
        """) + service_sections(folder))  # fmt: skip
    upgrade(f"sqlite:///{folder}/m3mon.db")
    return load_model(path)


def _runs(endpoint: str, cls: str, kind: str, prompt: int, output: int) -> list[dict[str, object]]:
    return [
        {"endpoint": endpoint, "request_class": cls, "kind": kind, "started_at": END - 3600 - k * 60, "ok": True,
         "prompt_tokens": prompt, "completion_tokens": output, "extra": {}, "log": []}
        for k in range(100)
    ]  # fmt: skip


def _advice(model: Model) -> dict[str, list[str]]:
    db = Store(model.storage.url)
    try:
        with db.session() as s:
            return {c.name: c.ceiling.advice for c in build_contract(s, model, END)}
    finally:
        db.close()


def test_a_pool_shared_with_larger_requests_is_never_advised_lower(tmp_path: Path) -> None:
    model = _model(tmp_path)
    db = Store(model.storage.url)
    try:
        db.apply([endpoints_op(model.endpoints)])
        with db.session() as s:
            rows = _runs("shared", "long", "long_prompt", 23_900, 100) + _runs(
                "shared", "small", "chat", 100, 21
            )
            s.execute(insert(ProbeResultRow), rows + _runs("own", "solo", "chat", 200, 50))
            s.commit()
    finally:
        db.close()
    advice = _advice(model)
    assert advice["long"] == []
    (note,) = advice["small"]
    assert note == (
        "no KV-waste advice for this class: pool shared's --max-model-len must also fit long's P99 of "
        "24000 tokens (long: 100 samples from probe runs of every kind (long_prompt; prompt + output tokens))"
    )
    assert advice["solo"] == [
        "KV waste: max-model-len 131072 is 524× the largest P99 of pool own's traffic, 250 tokens (solo: 100 "
        "samples from probe runs of every kind (chat; prompt + output tokens)); a lower --max-model-len, not "
        "below 32768 (solo's context ceiling), frees KV cache"
    ]

    db = Store(model.storage.url)
    try:
        with db.session() as s:
            spans = [{"trace_id": f"{k:032x}", "span_id": f"{k:016x}", "name": "llm_request", "start_time": END - 99,
                      "end_time": END - 9, "prompt_tokens": 29_000, "completion_tokens": 1_000, "service_name": "shared"}
                     for k in range(5)]  # fmt: skip
            s.execute(insert(ServerSpanRow), spans)
            s.commit()
    finally:
        db.close()
    advice = _advice(model)
    assert advice["long"] == [] and not any("a lower --max-model-len" in a for a in advice["small"])
    assert advice["small"] == [
        "no KV-waste advice for this class: pool shared's --max-model-len must also fit real traffic's P99 of "
        "30000 tokens (5 real-traffic spans of the pool (prompt + output tokens))"
    ]
