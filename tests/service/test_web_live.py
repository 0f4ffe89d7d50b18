"""``m3mon run`` behind its web config: TLS, client certificates and bcrypt basic auth on every route,
with the real clients the generated configs set up: Alertmanager's webhook, Prometheus' scrape and
vLLM's OTLP exporter (through the compose entrypoint that builds its header from the secret file).
The store is a fresh database on a real PostgreSQL and the endpoint it probes answers with a poison
row (tests/service/poison_endpoint.py), which must be dead-lettered without stalling anything. The
last test takes the database away and watches ``/-/ready`` and the evaluate job's counters say so,
then recover."""

from __future__ import annotations

import json
import os
import ssl
import subprocess
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace.export import SpanExportResult
from opentelemetry.util.re import parse_env_headers

from monitor.generate.alertmanager import alertmanager_config
from monitor.generate.compose import compose_file
from monitor.generate.compose_secrets import AUTH_ENTRYPOINT
from monitor.generate.prometheus_config import prometheus_config
from monitor.model import load_model
from tests.service.live import (
    PASSWORD,
    TLS,
    USER,
    Monitor,
    basic,
    config_doc,
    free_port,
    fresh_database,
    make_tls,
    running_monitor,
    wait_until,
    write_web_config,
)
from tests.service.poison_endpoint import POISON_FINISH_REASON, poison_endpoint
from tests.service.spans import CHILD, export
from tests.support.alertmanager import running_alertmanager
from tests.support.postgres import PostgresCluster
from tests.support.prometheus import query as prom_query
from tests.support.prometheus import running_prometheus, wait_for

pytestmark = pytest.mark.timeout(150)

ROUTES = [("GET", "/metrics"), ("GET", "/-/healthy"), ("GET", "/-/ready"), ("POST", "/-/reload"),
          ("POST", "/alertmanager"), ("POST", "/v1/traces")]  # fmt: skip


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TLS:
    return make_tls(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def monitor(tmp_path_factory: pytest.TempPathFactory, tls: TLS, postgres_url: str) -> Iterator[Monitor]:
    tmp = tmp_path_factory.mktemp("monitor")
    write_web_config(
        tmp / "web.yml", tls, client_auth_type="VerifyClientCertIfGiven", client_ca_file=str(tls.ca)
    )
    (tmp / "password").write_text(PASSWORD + "\n")  # a trailing newline, as `echo` writes it
    creds = {"username": USER, "password_file": str(tmp / "password"), "ca_file": str(tls.ca)}
    with fresh_database(postgres_url) as url, poison_endpoint() as endpoint:
        doc = config_doc(tmp, free_port(), scheme="https", storage_url=url, credentials=creds)
        doc["endpoints"][0]["base_url"] = endpoint.base_url  # its probe answer poisons the store
        # the web config comes from the command line here (the config key is used by the other modules)
        with running_monitor(tmp, doc, "--web.config.file", str(tmp / "web.yml"), verify=str(tls.ca),
                             headers={"Authorization": basic()}, scheme="https") as m:  # fmt: skip
            assert m.storage_url.startswith("postgresql+psycopg://")
            yield m


def test_every_route_needs_the_right_credentials(monitor: Monitor) -> None:
    before = monitor.metric("m3mon_receiver_rejected_total", reason="unauthorized")
    for auth in (None, basic(password="wrong"), basic(user="nobody"), "Bearer x", "Basic !!!"):
        with monitor.client(headers={"Authorization": auth} if auth else {}) as c:
            for method, path in ROUTES:
                r = c.request(method, path, content=b"{}")
                assert r.status_code == 401, (auth, path, r.text)
                assert r.headers["www-authenticate"] == "Basic"
    with monitor.client() as c:
        assert c.get("/metrics").status_code == 200
        assert c.get("/-/healthy").text == "m3mon is Healthy.\n"
        assert c.get("/-/ready").json() == {"status": "ready"}
    after = monitor.metric("m3mon_receiver_rejected_total", reason="unauthorized")
    assert after - before == 5 * len(ROUTES)
    assert monitor.metric("m3mon_receiver_rejected_total", receiver="otlp", reason="unauthorized") >= 5


def test_an_unauthenticated_body_is_never_read(monitor: Monitor) -> None:
    """401 comes back while a client still 'sends' a 1 GB body: the middleware answers first."""
    host, port = monitor.base.removeprefix("https://").split(":")
    context = ssl.create_default_context(cafile=str(monitor.verify))
    import socket

    with (
        socket.create_connection((host, int(port)), timeout=5) as raw,
        context.wrap_socket(raw, server_hostname=host) as s,
    ):
        s.sendall(b"POST /alertmanager HTTP/1.1\r\nHost: x\r\nContent-Length: 1000000000\r\n\r\n{")
        assert s.recv(200).startswith(b"HTTP/1.1 401")


def test_tls_with_optional_client_certificates(monitor: Monitor, tls: TLS) -> None:
    with pytest.raises(httpx.HTTPError):
        httpx.get(monitor.base.replace("https", "http") + "/-/healthy", timeout=5)
    with pytest.raises(httpx.ConnectError):  # a CA that did not sign the server's certificate
        httpx.get(monitor.base + "/-/healthy", verify=ssl.create_default_context(cafile=str(tls.other_cert)))
    good = ssl.create_default_context(cafile=str(tls.ca))
    good.load_cert_chain(tls.client_cert, tls.client_key)
    r = httpx.get(monitor.base + "/-/healthy", verify=good, headers={"Authorization": basic()}, timeout=5)
    assert r.status_code == 200
    stranger = ssl.create_default_context(cafile=str(tls.ca))
    stranger.load_cert_chain(tls.other_cert, tls.other_key)
    with pytest.raises(httpx.HTTPError):  # a client certificate from a CA the monitor does not trust
        httpx.get(monitor.base + "/-/healthy", verify=stranger, headers={"Authorization": basic()}, timeout=5)


def test_the_monitor_watches_itself(monitor: Monitor) -> None:
    wait_until(lambda: monitor.metric("m3mon_job_runs_total", task="evaluate", result="success") >= 2, 15,
               "two evaluations")  # fmt: skip
    now = datetime.now(UTC).timestamp()
    assert now - 30 < monitor.metric("m3mon_job_last_success_timestamp_seconds", task="evaluate") <= now + 1
    (last_probe,) = monitor.samples("m3mon_job_last_success_timestamp_seconds", task="probe:chat-32k")
    assert last_probe >= 0
    (delay,) = monitor.samples("m3mon_job_start_delay_seconds", task="evaluate")  # exposed, once
    assert 0 <= delay < 60
    cpu = "m3mon_job_cpu_seconds_total"
    kinds = {k: monitor.samples(cpu, kind=k) for k in ("scrape", "write", "evaluate")}
    assert all(len(v) == 1 and v[0] > 0 for v in kinds.values()), kinds  # exposed once per kind, counting
    evaluated = kinds["evaluate"][0]
    wait_until(lambda: monitor.metric(cpu, kind="evaluate") > evaluated, 30,
               "the evaluate job's CPU to grow")  # fmt: skip
    for name in ("process_start_time_seconds", "process_resident_memory_bytes", "python_gc_objects_collected_total",
                 "python_info"):  # fmt: skip
        assert monitor.metric(name) > 0, name
    assert "m3mon running: exporter on https://" in monitor.log()
    assert "without TLS or authentication" not in monitor.log()


def test_a_poisoned_probe_row_is_dead_lettered_and_nothing_stalls(monitor: Monitor) -> None:
    """The endpoint's chat stream ends with a 41-character finish_reason: PostgreSQL refuses the
    probe's row (SQLSTATE 22001). The running service sets that one write aside in its dead-letter
    file and counts it, stays ready, and the writes after it are stored (the tests below)."""
    reason = "data_error"
    wait_until(
        lambda: monitor.metric("m3mon_store_dead_letters_total", reason=reason) >= 1, 20, "a dead letter"
    )
    lines = (monitor.tmp / "spool" / "dead-letters.jsonl").read_text().splitlines()
    (letter,) = [json.loads(line) for line in lines]
    assert (letter["reason"], letter["sqlstate"], letter["cause"]) == (reason, "22001",
            "psycopg.errors.StringDataRightTruncation")  # fmt: skip
    assert letter["op"]["row"]["finish_reason"] == POISON_FINISH_REASON
    assert monitor.metric("m3mon_store_dead_letters_total") == 1
    assert monitor.samples("m3mon_store_backlog_items") == [0.0]
    assert monitor.count("probe_results") == 0
    with monitor.client() as c:
        assert c.get("/-/ready").status_code == 200


def _alertmanager_config(monitor: Monitor) -> dict[str, Any]:
    config = alertmanager_config(load_model(monitor.config))
    hook = config["receivers"][-1]["webhook_configs"][0]
    assert hook["http_config"]["basic_auth"] == {
        "username": USER,
        "password_file": str(monitor.tmp / "password"),
    }
    assert hook["http_config"]["tls_config"] == {"ca_file": str(monitor.verify)}
    return config


def test_a_real_alertmanager_delivers_through_the_generated_credentials(
    monitor: Monitor, tmp_path: Path
) -> None:
    with running_alertmanager(_alertmanager_config(monitor), tmp_path) as am:
        alert = {"labels": {"alertname": "M3MonAuthTest", "class": "chat-32k", "slo": "availability"},
                 "annotations": {"summary": "sent by a real Alertmanager"},
                 "startsAt": datetime.now(UTC).isoformat()}  # fmt: skip
        assert httpx.post(f"{am}/api/v2/alerts", json=[alert], timeout=5).status_code == 200
        wait_until(lambda: monitor.count("incidents") >= 1, 30, "the incident stored", every=0.3)
    rows = monitor.rows("SELECT alertname, request_class, status FROM incidents")
    assert rows == [("M3MonAuthTest", "chat-32k", "firing")], (tmp_path / "am.log").read_text()[-2000:]


def test_a_real_prometheus_scrapes_through_the_generated_credentials(
    monitor: Monitor, tmp_path: Path
) -> None:
    config = prometheus_config(load_model(monitor.config), [], interval=1.0)
    (job,) = [j for j in config["scrape_configs"] if j["job_name"] == "m3mon"]
    assert job["scheme"] == "https" and job["basic_auth"]["password_file"] == str(monitor.tmp / "password")
    with running_prometheus(config, tmp_path) as url:

        def up() -> bool:
            result = prom_query(url, 'up{job="m3mon"}')
            return bool(result) and result[0]["value"][1] == "1"

        wait_for(up, 30, "Prometheus to scrape the monitor (up == 1)")


#: requests lets these replace an explicit CA file (it does so for every request without ``verify``).
CA_BUNDLE_VARS = ("REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE")


def test_a_real_otlp_exporter_with_and_without_the_password(
    monitor: Monitor, monkeypatch: pytest.MonkeyPatch
) -> None:
    for var in CA_BUNDLE_VARS:
        monkeypatch.delenv(var, raising=False)
    url, ca = f"{monitor.base}/v1/traces", str(monitor.verify)
    header = f"Authorization=Basic%20{basic().split()[1]}"  # what the compose entrypoint exports
    headers = dict(parse_env_headers(header, liberal=True))
    assert export(OTLPSpanExporter(endpoint=url, certificate_file=ca, headers=headers), ["r-ok"]) == (
        SpanExportResult.SUCCESS
    )
    wrong = {"authorization": basic(password="old")}
    assert export(OTLPSpanExporter(endpoint=url, certificate_file=ca, headers=wrong), ["r-bad"]) == (
        SpanExportResult.FAILURE
    )
    wait_until(lambda: monitor.count("server_spans") >= 1, 10, "the span stored")
    assert monitor.rows("SELECT request_id FROM server_spans") == [("r-ok",)]


def test_the_compose_entrypoint_gives_vllm_its_otlp_header(monitor: Monitor, tmp_path: Path) -> None:
    """The generated vLLM service runs AUTH_ENTRYPOINT: run it (``$$`` is compose's ``$``) with
    the env compose sets, around an exporter built the way vLLM builds it."""
    model = load_model(monitor.config)
    vllm = compose_file(model)["services"]["vllm-pool"]
    assert vllm["entrypoint"][2] == AUTH_ENTRYPOINT and vllm["command"][:2] == ["vllm", "serve"]
    env = {k: v for k, v in os.environ.items() if k not in CA_BUNDLE_VARS}
    env |= {**vllm["environment"], "PYTHONPATH": str(Path(__file__).parents[2])}
    script = AUTH_ENTRYPOINT.replace("$$", "$")
    cmd = [
        "/bin/sh",
        "-c",
        script,
        "sh",
        sys.executable,
        "-c",
        CHILD,
        f"{monitor.base}/v1/traces",
        "from-compose",
    ]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert env["OTEL_EXPORTER_OTLP_TRACES_CERTIFICATE"] == str(monitor.verify)
    wait_until(lambda: monitor.count("server_spans") >= 2, 30, "the span stored")
    assert json.dumps(vllm).count(PASSWORD) == 0


def test_the_kubernetes_probes_pass_the_monitors_basic_auth(monitor: Monitor, tmp_path: Path) -> None:
    """The generated Deployment's exec probes (basic auth from the client Secret's password file)
    answer 0 from the live monitor, and fail with a wrong password: a kubelet httpGet would get 401."""
    from monitor.generate.kubernetes.common import Options
    from monitor.generate.kubernetes.workload import PROBE_SECRET_DIR, deployment

    (container,) = deployment(load_model(str(monitor.config)), Options())["spec"]["template"]["spec"][
        "containers"
    ]
    for password, status in ((PASSWORD, 0), ("wrong", 1)):
        (tmp_path / "password").write_text(password + "\n")
        for probe in (container["livenessProbe"], container["readinessProbe"]):
            command = [a.replace(f"{PROBE_SECRET_DIR}/password", str(tmp_path / "password"))
                       for a in probe["exec"]["command"]]  # fmt: skip
            proc = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
            assert (proc.returncode == 0) == (status == 0), proc.stderr[-300:]


def _evaluations(monitor: Monitor, result: str) -> float:
    return monitor.metric("m3mon_job_runs_total", task="evaluate", result=result)


def _ready_status(monitor: Monitor, status: int) -> httpx.Response | None:
    with monitor.client(timeout=3.0) as c:
        r = c.get("/-/ready")
    return r if r.status_code == status else None


def test_a_database_outage_fails_the_evaluate_job_and_readiness_says_so(
    monitor: Monitor, postgres_cluster: PostgresCluster
) -> None:
    """Runs last in this module. With the PostgreSQL cluster stopped the evaluate job raises: each
    run counts ``result="failure"``, its last-success time stands still, and ``/-/ready`` turns 503
    naming the stale evaluation (two steps = 4 s); with the database back it is 200 again."""
    wait_until(lambda: _evaluations(monitor, "success") >= 1, 15, "an evaluation")
    failed = _evaluations(monitor, "failure")
    postgres_cluster.stop()
    try:
        wait_until(lambda: _evaluations(monitor, "failure") > failed, 15, "a failed evaluation counted")
        last = monitor.metric("m3mon_job_last_success_timestamp_seconds", task="evaluate")
        r = wait_until(lambda: _ready_status(monitor, 503), 15, "/-/ready 503")
        assert r.json()["status"] == "not ready", r.text
        assert any("the last SLO evaluation completed" in why for why in r.json()["reasons"]), r.text
        assert _evaluations(monitor, "failure") >= failed + 2
        assert monitor.metric("m3mon_job_last_success_timestamp_seconds", task="evaluate") == last
        assert "job evaluate failed" in monitor.log()
    finally:
        postgres_cluster.start()
    wait_until(lambda: _ready_status(monitor, 200), 20, "/-/ready 200 again")
    assert monitor.metric("m3mon_job_last_success_timestamp_seconds", task="evaluate") > last
