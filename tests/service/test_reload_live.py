"""Reloading a running ``m3mon run``: SIGHUP and ``POST /-/reload``, good and bad files.

One process serves the module; each test writes the configuration it reloads to, so the tests
do not depend on each other's order. A good file is applied at once (the scheduler plans the new
model's jobs, the exporter's job series follow); a bad file, or one that changes what only a
restart can apply, keeps the running configuration and is logged and counted. The process
still stops cleanly on SIGTERM afterwards (asserted by :func:`running_monitor`).
"""

from __future__ import annotations

import copy
import json
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.service.live import (
    Monitor,
    basic,
    config_doc,
    free_port,
    make_tls,
    running_monitor,
    wait_until,
    write_web_config,
)
from tests.support import localhttp

pytestmark = pytest.mark.timeout(120)

NEW_CLASS = {
    "name": "chat-128k",
    "max_context_tokens": 131072,
    "probes": ["chat"],
    "probe": {"interval": "1h", "jitter": "0.1s", "timeout": "5s"},
    "slos": [{"name": "availability", "sli": "availability", "objective": 99}],
}


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("reload")
    return config_doc(tmp, free_port())


@pytest.fixture(scope="module")
def monitor(base: dict[str, Any]) -> Iterator[Monitor]:
    tmp = Path(base["storage"]["buffer_dir"]).parent
    with running_monitor(tmp, base, "--log.format", "json") as m:
        yield m


def _tasks(m: Monitor) -> set[str]:
    with m.client() as c:
        text = c.get("/metrics").text
    return {s.labels["task"] for f in text_string_to_metric_families(text) for s in f.samples
            if s.name == "m3mon_job_last_success_timestamp_seconds"}  # fmt: skip


def _write(m: Monitor, doc: dict[str, Any]) -> None:
    m.config.write_text(yaml.safe_dump(doc, sort_keys=False))


def _reloads(m: Monitor, result: str) -> float:
    return m.metric("m3mon_config_reloads_total", result=result)


def _with_new_class(base: dict[str, Any]) -> dict[str, Any]:
    doc = copy.deepcopy(base)
    doc["request_classes"].append(copy.deepcopy(NEW_CLASS))
    doc["endpoints"][0]["classes"].append("chat-128k")
    return doc


def test_sighup_applies_a_good_file_and_replans_the_jobs(monitor: Monitor, base: dict[str, Any]) -> None:
    _write(monitor, base)
    monitor.proc.send_signal(signal.SIGHUP)  # back to the base model, whatever ran before
    wait_until(lambda: "probe:chat-128k" not in _tasks(monitor), 10, "the base model")
    ok = _reloads(monitor, "success")
    _write(monitor, _with_new_class(base))
    monitor.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: _reloads(monitor, "success") == ok + 1, 10, "the reload counted")
    assert {"probe:chat-32k", "probe:chat-128k", "evaluate", "scrape:pool"} <= _tasks(monitor)
    _write(monitor, base)
    monitor.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: "probe:chat-128k" not in _tasks(monitor), 10, "the removed class's series to go")
    assert monitor.proc.poll() is None, "SIGHUP must not end the process"


def test_sighup_keeps_the_running_config_when_the_file_is_bad(monitor: Monitor, base: dict[str, Any]) -> None:
    bad = _with_new_class(base)
    bad["request_classes"][1]["slos"][0]["objective"] = 120
    failed, before = _reloads(monitor, "failure"), _tasks(monitor)
    _write(monitor, bad)
    monitor.proc.send_signal(signal.SIGHUP)
    wait_until(lambda: _reloads(monitor, "failure") == failed + 1, 10, "the failed reload counted")
    assert _tasks(monitor) == before and "probe:chat-128k" not in before
    assert "configuration reload refused, keeping the running configuration" in monitor.log()
    assert "request_classes[1].slos[0].objective" in monitor.log()
    with monitor.client() as c:
        assert c.get("/-/ready").status_code == 200


def test_post_reload_answers_with_the_outcome(monitor: Monitor, base: dict[str, Any]) -> None:
    _write(monitor, _with_new_class(base))
    with monitor.client() as c:
        assert c.post("/-/reload").json() == {"status": "reloaded"}
        assert "probe:chat-128k" in _tasks(monitor)
        _write(monitor, {**base, "version": "m3mon/v2"})
        r = c.post("/-/reload")
        assert r.status_code == 500 and r.json()["status"] == "failed" and "version" in r.json()["error"]
        assert "probe:chat-128k" in _tasks(monitor)
        _write(monitor, base)
        assert c.put("/-/reload").status_code == 200
    assert "probe:chat-128k" not in _tasks(monitor)


@pytest.mark.parametrize(
    ("section", "value", "named"),
    [("exporter", {"listen": "127.0.0.1:1"}, "exporter.listen"),
     ("storage", {"url": "postgresql+psycopg://u:hunter2@db/m3mon"}, "storage")],
)  # fmt: skip
def test_what_needs_a_restart_is_refused(monitor: Monitor, base: dict[str, Any], section: str, value: Any,
                                         named: str) -> None:  # fmt: skip
    doc = copy.deepcopy(base)
    doc[section] = {**doc[section], **value}
    _write(monitor, doc)
    with monitor.client() as c:
        r = c.post("/-/reload")
    assert r.status_code == 500 and f"{named}: changed; restart m3mon" in r.json()["error"]
    assert "hunter2" not in r.text and "hunter2" not in monitor.log()
    _write(monitor, base)


def test_a_reload_turns_basic_auth_on_and_off(monitor: Monitor, base: dict[str, Any]) -> None:
    web = write_web_config(monitor.tmp / "web.yml", None)
    _write(monitor, {**base, "exporter": {**base["exporter"], "web_config_file": str(web)}})
    with monitor.client() as c:
        assert c.post("/-/reload").status_code == 200
        assert c.get("/metrics").status_code == 401
        _write(monitor, base)
        assert c.post("/-/reload", headers={"Authorization": basic()}).status_code == 200
        assert c.get("/metrics").status_code == 200
    assert localhttp.get(monitor.base + "/-/healthy", timeout=5).status_code == 200


def test_the_log_is_json_lines(monitor: Monitor) -> None:
    lines = [json.loads(line) for line in monitor.log().splitlines() if line.strip()]
    assert lines and all({"ts", "level", "logger", "msg"} <= line.keys() for line in lines)
    assert any(
        line["logger"] == "monitor.service.service" and "no web config" in line["msg"] for line in lines
    )


def _web_cases(tmp: Path) -> dict[str, tuple[str, str]]:
    """name -> (web config text, what the refusal must say)."""
    tls = make_tls(tmp / "tls")
    with_tls = {"tls_server_config": {"cert_file": str(tls.cert), "key_file": str(tls.key)}}
    return {
        "plain password": (yaml.safe_dump({"basic_auth_users": {"m3mon": "hunter2"}}),
                           "basic_auth_users: m3mon: expected a bcrypt hash"),
        "unknown key": ("tls_server_config: {cert_file: a, key_file: b, cipher_suites: [x]}\n",
                        "tls_server_config.cipher_suites: an exporter-toolkit setting m3mon does not implement"),
        "missing certificate": (yaml.safe_dump({"tls_server_config": {"cert_file": "nope.crt", "key_file": "nope.key"}}),
                                "tls_server_config.cert_file: cannot load"),
        "not YAML": ("basic_auth_users: [\n", "not valid YAML"),
        "TLS turned on": (yaml.safe_dump(with_tls), "tls_server_config: changed; restart m3mon"),
    }  # fmt: skip


def test_a_broken_web_config_or_a_tls_change_is_refused(monitor: Monitor, base: dict[str, Any]) -> None:
    """Each case points the configuration at a web config a reload must not apply; the running
    configuration (plain HTTP, no auth) stays, and every refusal names the web config file."""
    cases = _web_cases(monitor.tmp)
    failed = _reloads(monitor, "failure")
    for name, (text, said) in cases.items():
        web = monitor.tmp / f"web-{name.replace(' ', '-')}.yml"
        web.write_text(text)
        _write(monitor, {**base, "exporter": {**base["exporter"], "web_config_file": str(web)}})
        with monitor.client() as c:
            r = c.post("/-/reload")
            assert r.status_code == 500 and r.json()["status"] == "failed", (name, r.text)
            assert str(web) in r.json()["error"] and said in r.json()["error"], (name, r.text)
            assert c.get("/metrics").status_code == 200  # still no authentication: the old config runs
    assert _reloads(monitor, "failure") == failed + len(cases)
    assert "hunter2" not in monitor.log()
    _write(monitor, base)


def test_a_yaml_syntax_error_is_refused_naming_the_line(monitor: Monitor, base: dict[str, Any]) -> None:
    failed = _reloads(monitor, "failure")
    monitor.config.write_text(yaml.safe_dump(base, sort_keys=False) + "endpoints: [\n")
    with monitor.client() as c:
        r = c.post("/-/reload")
    assert r.status_code == 500 and f"{monitor.config}:" in r.json()["error"], r.text
    assert "not valid YAML" in r.json()["error"], r.text
    assert _reloads(monitor, "failure") == failed + 1
    _write(monitor, base)
