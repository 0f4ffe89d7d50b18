"""The live receivers under hostile input: caps before reading, fields checked at the edge, and a
bounded property-based run. A real ``m3mon run`` (basic auth, a fresh database on a real
PostgreSQL) serves the module; every
test measures what the store holds before and after, and the last one proves the write path did
not stall: a valid webhook and a valid span sent after all the garbage are stored at once.
"""

from __future__ import annotations

import gzip
import json
import socket
import time
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.service.live import (
    Monitor,
    basic,
    config_doc,
    free_port,
    fresh_database,
    running_monitor,
    wait_until,
)
from tests.traces.otlp_bodies import request, span

pytestmark = pytest.mark.timeout(120)

PB = {"content-type": "application/x-protobuf"}
#: How many hostile requests each test sent (printed at the end of the module: the R table).
SENT: dict[str, int] = {}


def valid_webhook(fingerprint: str = "f00d", **labels: str) -> dict[str, Any]:
    alert = {"status": "firing", "fingerprint": fingerprint, "startsAt": "2026-11-29T10:00:00.123456789Z",
             "endsAt": "0001-01-01T00:00:00Z", "generatorURL": "http://prometheus/graph",
             "labels": {"alertname": "SLOErrorBudgetBurnPage", "class": "chat-32k", "slo": "availability",
                        "severity": "page", **labels},
             "annotations": {"summary": "burning"}}  # fmt: skip
    return {"version": "4", "status": "firing", "receiver": "m3mon", "groupKey": "{}:{}", "alerts": [alert]}


@pytest.fixture(scope="module")
def monitor(tmp_path_factory: pytest.TempPathFactory, postgres_url: str) -> Iterator[Monitor]:
    from tests.service.live import write_web_config

    tmp = tmp_path_factory.mktemp("receivers")
    web = write_web_config(tmp / "web.yml", None)
    with fresh_database(postgres_url) as url:
        doc = config_doc(tmp, free_port(), storage_url=url, web_config_file=str(web))
        with running_monitor(tmp, doc, headers={"Authorization": basic()}) as m:
            assert m.storage_url.startswith("postgresql+psycopg://")
            yield m
    print(f"\nhostile requests sent: {SENT} (total {sum(SENT.values())})")


def _stored(m: Monitor) -> tuple[int, int]:
    return m.count("incidents"), m.count("server_spans")


def _raw(m: Monitor, head: bytes) -> bytes:
    """Send request bytes on a plain socket; the first bytes of the answer (within 5 s)."""
    host, port = m.base.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=5) as s:
        s.sendall(head)
        return s.recv(300)


@pytest.mark.parametrize("path", ["/alertmanager", "/v1/traces"])
def test_a_declared_length_over_the_cap_is_refused_before_reading(monitor: Monitor, path: str) -> None:
    auth = basic().encode()
    started = time.monotonic()
    answer = _raw(monitor, b"POST " + path.encode() + b" HTTP/1.1\r\nHost: x\r\nAuthorization: " + auth
                  + b"\r\nContent-Length: 10000000000\r\n\r\n{")  # fmt: skip
    assert answer.startswith(b"HTTP/1.1 413"), answer
    assert time.monotonic() - started < 2
    SENT["declared too large"] = SENT.get("declared too large", 0) + 1


@pytest.mark.parametrize(("path", "cap"), [("/alertmanager", 4 << 20), ("/v1/traces", 8 << 20)])
def test_a_streamed_body_over_the_cap_is_refused(monitor: Monitor, path: str, cap: int) -> None:
    def chunks() -> Iterator[bytes]:
        for _ in range(cap // (1 << 20) + 2):
            yield b"\0" * (1 << 20)

    before = monitor.metric("m3mon_receiver_rejected_total", reason="too_large")
    with monitor.client() as c:
        assert c.post(path, content=chunks(), headers=PB).status_code == 413
    assert monitor.metric("m3mon_receiver_rejected_total", reason="too_large") == before + 1
    SENT["streamed too large"] = SENT.get("streamed too large", 0) + 1


def _webhook(**change: Any) -> bytes:
    doc = valid_webhook()
    alert = doc["alerts"][0]
    for key, value in change.items():
        if key.startswith("label_"):
            alert["labels"][key.removeprefix("label_")] = value
        elif key.startswith("annotation_"):
            alert["annotations"][key.removeprefix("annotation_")] = value
        else:
            alert[key] = value
    return json.dumps(doc).encode()


WEBHOOK_CASES = {
    "alerts[0].fingerprint": _webhook(fingerprint="f" * 65),
    "alerts[0].labels.class": _webhook(label_class="c" * 101),
    "alerts[0].labels.alertname": _webhook(label_alertname="A" * 201),
    "alerts[0].labels.severity": _webhook(label_severity="s" * 21),
    "alerts[0].annotations.summary": _webhook(annotation_summary="nul \x00 byte"),
    "alerts[0].labels.team": _webhook(label_team=7),
    "alerts[0].startsAt": _webhook(startsAt="yesterday"),
}


@pytest.mark.parametrize("field", sorted(WEBHOOK_CASES))
def test_a_bad_webhook_field_is_a_400_naming_it_and_nothing_is_stored(monitor: Monitor, field: str) -> None:
    before = _stored(monitor)
    with monitor.client() as c:
        r = c.post("/alertmanager", content=WEBHOOK_CASES[field])
    assert r.status_code == 400 and r.json()["field"] == field, r.text
    assert _stored(monitor) == before
    SENT["bad webhook field"] = SENT.get("bad webhook field", 0) + 1


SPAN_CASES = {
    "attributes[gen_ai.request.id]: at most 200 characters (got 201)": {"gen_ai.request.id": "r" * 201},
    "attributes[gen_ai.request.id]: must not contain NUL": {"gen_ai.request.id": "r\x00"},
    "attributes[gen_ai.usage.prompt_tokens]: at most 2147483647": {"gen_ai.usage.prompt_tokens": 2**40},
}


@pytest.mark.parametrize("problem", sorted(SPAN_CASES))
def test_a_bad_span_field_is_a_400_naming_it_and_nothing_is_stored(monitor: Monitor, problem: str) -> None:
    before = _stored(monitor)
    body = request(span(span_id=b"\x01" * 8), span(attributes=SPAN_CASES[problem])).SerializeToString()
    with monitor.client() as c:
        r = c.post("/v1/traces", content=body, headers=PB)
    assert r.status_code == 400 and "resource_spans[0].scope_spans[0].spans[1]." + problem in r.text, r.text
    assert _stored(monitor) == before  # the valid first span of the batch is not kept either
    SENT["bad span field"] = SENT.get("bad span field", 0) + 1


def test_a_gzip_bomb_is_refused(monitor: Monitor) -> None:
    with monitor.client() as c:
        r = c.post(
            "/v1/traces", content=gzip.compress(b"\0" * (9 << 20)), headers={**PB, "content-encoding": "gzip"}
        )
    assert r.status_code == 400 and "inflates beyond" in r.text
    SENT["gzip bomb"] = 1


# --- a bounded property-based run against the live receivers ---------------------------------------

FUZZ = settings(max_examples=70, deadline=5000, database=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])  # fmt: skip
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=40),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=16,
)
NOT_TEXT = st.none() | st.booleans() | st.integers() | st.floats() | st.lists(st.integers(), max_size=2)
WITH_NUL = st.tuples(st.text(max_size=20), st.text(max_size=20)).map(lambda p: p[0] + "\x00" + p[1])
LETTERS = st.text(alphabet="abcdefghijklmnopqrstuvwxyz ", min_size=1, max_size=30)
#: Webhook changes that break the contract whatever else the payload holds (each must be a 400).
BAD_WEBHOOK = st.one_of(
    st.tuples(
        st.just("fingerprint"), st.text(min_size=65, max_size=300) | WITH_NUL | NOT_TEXT | st.just("a b")
    ),
    st.tuples(st.just("label_class"), st.text(min_size=101, max_size=300) | NOT_TEXT),
    st.tuples(st.just("label_alertname"), st.text(min_size=201, max_size=400) | NOT_TEXT),
    st.tuples(st.just("annotation_summary"), WITH_NUL | NOT_TEXT),
    st.tuples(st.just("startsAt"), LETTERS | NOT_TEXT),
    st.tuples(st.just("status"), st.text(max_size=20).filter(lambda s: s not in ("firing", "resolved"))),
)
BAD_SPAN = st.one_of(
    st.fixed_dictionaries({"gen_ai.request.id": st.text(min_size=201, max_size=400) | WITH_NUL}),
    st.fixed_dictionaries({"gen_ai.usage.prompt_tokens": st.integers(min_value=2**31, max_value=2**63 - 1)}),
)


def _hostile_webhook(change: tuple[str, Any]) -> bytes:
    return _webhook(**{change[0]: change[1]})


@FUZZ
@given(body=st.one_of(st.binary(max_size=3000), JSON.map(lambda v: json.dumps(v).encode()),
                      BAD_WEBHOOK.map(_hostile_webhook)))  # fmt: skip
def test_fuzz_the_alertmanager_receiver(monitor: Monitor, body: bytes) -> None:
    before = _stored(monitor)
    with monitor.client(timeout=5.0) as c:
        r = c.post("/alertmanager", content=body)
    assert r.status_code == 400, (body[:200], r.status_code, r.text[:300])
    assert _stored(monitor)[0] == before[0]
    SENT["fuzzed webhooks"] = SENT.get("fuzzed webhooks", 0) + 1


def _otlp_case(kind: str, raw: bytes, attrs: dict[str, object]) -> tuple[bytes, dict[str, str], set[int]]:
    """(body, headers, the statuses allowed): garbage may decode as an empty request (200, nothing kept)."""
    if kind == "protobuf":
        return raw, PB, {200, 400}
    if kind == "gzip":
        return raw, {**PB, "content-encoding": "gzip"}, {400}
    if kind == "media":
        return raw, {"content-type": "text/plain"}, {415}
    return request(span(attributes=attrs)).SerializeToString(), PB, {400}


@FUZZ
@given(
    kind=st.sampled_from(["protobuf", "gzip", "media", "span"]), raw=st.binary(max_size=3000), attrs=BAD_SPAN
)
def test_fuzz_the_otlp_receiver(monitor: Monitor, kind: str, raw: bytes, attrs: dict[str, object]) -> None:
    body, headers, allowed = _otlp_case(kind, raw, attrs)
    before = _stored(monitor)
    with monitor.client(timeout=5.0) as c:
        r = c.post("/v1/traces", content=body, headers=headers)
    assert r.status_code in allowed, (kind, body[:100], r.status_code, r.text[:300])
    assert _stored(monitor)[1] == before[1]
    SENT["fuzzed OTLP requests"] = SENT.get("fuzzed OTLP requests", 0) + 1


def test_after_the_garbage_the_store_still_takes_writes(monitor: Monitor) -> None:
    """Runs last in this module: nothing stalled, nothing was dead-lettered, nothing was stored."""
    incidents, spans = _stored(monitor)
    assert (incidents, spans) == (0, 0)
    with monitor.client() as c:
        assert c.post("/alertmanager", json=valid_webhook()).status_code == 200
        assert (
            c.post("/v1/traces", content=request(span()).SerializeToString(), headers=PB).status_code == 200
        )
    wait_until(lambda: _stored(monitor) == (1, 1), 5, "the valid webhook and span stored")
    assert monitor.samples("m3mon_store_backlog_items") == [0.0]
    dead = monitor.samples("m3mon_store_dead_letters_total")  # one series per reason, all exposed
    assert dead and all(v == 0 for v in dead)
    assert not (monitor.tmp / "spool" / "dead-letters.jsonl").exists()
    with monitor.client() as c:
        assert c.get("/-/ready").status_code == 200
