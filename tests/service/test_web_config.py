"""The web config (exporter-toolkit format), bcrypt basic auth and the refusal to serve unprotected
beyond loopback: every bad file is a ConfigError naming the file and the key."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import bcrypt
import pytest
import yaml

from monitor.errors import ConfigError
from monitor.generate.alertmanager import alertmanager_config
from monitor.generate.compose import compose_file
from monitor.generate.prometheus_config import prometheus_config
from monitor.model import load_model
from monitor.web import auth as auth_mod
from monitor.web.auth import BasicAuth, hash_password, parse_basic
from monitor.web.config import check_exposure, is_loopback, load_web_config
from tests.service.live import PASSWORD, TLS, USER, basic, config_doc, make_tls, write_web_config

pytestmark = pytest.mark.timeout(60)


def _problems(path: Path, doc: object) -> str:
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError) as err:
        load_web_config(path)
    return str(err.value)


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> TLS:
    return make_tls(tmp_path_factory.mktemp("tls"))


def test_the_exporter_toolkit_example_loads_with_paths_relative_to_the_file(tmp_path: Path, tls: TLS) -> None:
    (tmp_path / "certs").mkdir()
    for src in (tls.cert, tls.key, tls.ca):
        (tmp_path / "certs" / src.name).write_bytes(src.read_bytes())
    hashed = "$2y$10$" + hash_password("pw", rounds=10)[7:]  # htpasswd -B writes $2y$
    (tmp_path / "web.yml").write_text(
        "tls_server_config:\n  cert_file: certs/server.crt\n  key_file: certs/server.key\n"
        "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: certs/ca.pem\n  min_version: TLS13\n"
        f"basic_auth_users:\n  alice: {hashed}\n"
    )
    web = load_web_config(tmp_path / "web.yml")
    assert (
        web.tls is not None and web.tls.cert_file.resolve() == (tmp_path / "certs" / "server.crt").resolve()
    )
    assert web.users == (("alice", hashed),) and web.authenticates
    assert asyncio.run(BasicAuth(dict(web.users)).check(basic("alice", "pw")))


@pytest.mark.parametrize(
    ("doc", "expected"),
    [
        ({"basic_auth_users": {"alice": "plain-password"}}, "basic_auth_users: alice: expected a bcrypt hash"),
        ({"basic_auth_users": {"a:b": "$2y$10$" + "a" * 53}}, "must be non-empty and hold no ':'"),
        ({"http_server_config": {"http2": False}}, "http_server_config: an exporter-toolkit setting m3mon does not"),
        ({"tls_server_config": {"cert_file": "x", "key_file": "y", "cipher_suites": []}}, "tls_server_config.cipher_suites"),
        ({"tls_server_config": {"cert_file": "x", "key_file": "y", "client_auth_type": "RequestClientCert"}},
         "tls_server_config.client_auth_type: RequestClientCert is not supported"),
        ({"tls_server_config": {"cert_file": "x", "key_file": "y", "min_version": "SSL3"}}, "expected one of TLS10"),
        ({"tls_server_config": {"key_file": "y"}}, "tls_server_config.cert_file: required key is missing"),
        ({"tls_server_config": {"cert_file": "nope.crt", "key_file": "nope.key"}}, "tls_server_config.cert_file: cannot load"),
        ({"tls_server": {}}, "tls_server: unknown key"),
        (["a", "list"], "expected a mapping"),
    ],
)  # fmt: skip
def test_every_bad_web_config_names_the_key(tmp_path: Path, doc: object, expected: str) -> None:
    message = _problems(tmp_path / "web.yml", doc)
    assert str(tmp_path / "web.yml") in message and expected in message, message


def test_client_certificate_policies_need_their_ca(tmp_path: Path, tls: TLS) -> None:
    base = {"cert_file": str(tls.cert), "key_file": str(tls.key)}
    assert "client_ca_file: RequireAndVerifyClientCert needs a CA" in _problems(
        tmp_path / "a.yml", {"tls_server_config": {**base, "client_auth_type": "RequireAndVerifyClientCert"}}
    )
    assert "client_auth_type: client_ca_file is set without a policy" in _problems(
        tmp_path / "b.yml", {"tls_server_config": {**base, "client_ca_file": str(tls.ca)}}
    )


def test_loopback_is_the_only_place_to_serve_without_authentication(tmp_path: Path, tls: TLS) -> None:
    assert is_loopback("127.0.0.1:9464") and is_loopback("localhost:1") and is_loopback("127.3.2.1:1")
    assert not is_loopback("0.0.0.0:9464") and not is_loopback("monitor.internal:9464")
    check_exposure("127.0.0.1:9464", None, "m.yaml")
    with pytest.raises(ConfigError, match=r"m\.yaml: exporter\.listen: 0\.0\.0\.0:9464 is not a loopback"):
        check_exposure("0.0.0.0:9464", None, "m.yaml")
    tls_only = load_web_config(write_web_config(tmp_path / "tls.yml", tls, users={}))
    with pytest.raises(
        ConfigError, match=r"basic_auth_users: exporter\.listen 0\.0\.0\.0:9464 is not a loopback"
    ):
        check_exposure("0.0.0.0:9464", tls_only, "m.yaml")
    check_exposure("0.0.0.0:9464", load_web_config(write_web_config(tmp_path / "auth.yml", None)), "m.yaml")


def test_m3mon_run_refuses_an_open_listen_before_touching_the_database(tmp_path: Path) -> None:
    doc = config_doc(tmp_path, 9464)
    doc["exporter"]["listen"] = "0.0.0.0:9464"
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(doc))
    proc = subprocess.run([sys.executable, "-m", "monitor", "run", "-c", str(tmp_path / "m.yaml"), "--upgrade"],
                          capture_output=True, text=True, timeout=60)  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "exporter.listen: 0.0.0.0:9464 is not a loopback address" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / "m3mon.db").exists()


def test_basic_auth_verdicts(monkeypatch: pytest.MonkeyPatch) -> None:
    auth = BasicAuth({USER: hash_password(PASSWORD, rounds=4)})
    calls: list[bytes] = []
    real = auth_mod._checkpw
    monkeypatch.setattr(auth_mod, "_checkpw", lambda pw, h: calls.append(h) or real(pw, h))

    def check(header: str | None) -> bool:
        return asyncio.run(auth.check(header))

    assert check(basic()) and check(basic()) and len(calls) == 1  # the second answer came from the cache
    assert not check(basic(password="nope")) and not check(basic(user="ghost"))
    assert calls[-1] == auth_mod._DUMMY_HASH  # an unknown user still costs one bcrypt
    assert (
        not check(basic(password="x" * 73))
        and not check(None)
        and not check("Basic @@@")
        and not check("Digest x")
    )
    auth.replace({"other": hash_password("pw", rounds=4)})
    assert not check(basic()) and check(basic("other", "pw"))
    assert parse_basic(basic("u", "p:with:colons")) == ("u", "p:with:colons")


def test_the_hash_helper_writes_a_web_config(tmp_path: Path) -> None:
    (tmp_path / "pw").write_text(PASSWORD + "\n")
    proc = subprocess.run([sys.executable, "-m", "monitor.web", "--user", USER, "--password-file", str(tmp_path / "pw"),
                           "--rounds", "4"], capture_output=True, text=True, timeout=30, check=True)  # fmt: skip
    (tmp_path / "web.yml").write_text(proc.stdout)
    web = load_web_config(tmp_path / "web.yml")
    assert bcrypt.checkpw(PASSWORD.encode(), dict(web.users)[USER].encode())
    assert PASSWORD not in proc.stdout


def test_a_ca_for_the_clients_needs_an_https_receiver(tmp_path: Path) -> None:
    doc = config_doc(
        tmp_path, 9464, credentials={"password_file": "/run/secrets/pw", "ca_file": "/run/ca.pem"}
    )
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(doc))
    with pytest.raises(
        ConfigError, match=r"alerting\.monitor_receiver_url: exporter\.credentials\.ca_file is set"
    ):
        load_model(tmp_path / "m.yaml")


def test_without_credentials_nothing_authenticates_but_spans_still_reach_the_monitor(tmp_path: Path) -> None:
    (tmp_path / "m.yaml").write_text(yaml.safe_dump(config_doc(tmp_path, 9464)))
    model = load_model(tmp_path / "m.yaml")
    (job,) = [j for j in prometheus_config(model, [])["scrape_configs"] if j["job_name"] == "m3mon"]
    assert "basic_auth" not in job and "scheme" not in job
    assert "http_config" not in alertmanager_config(model)["receivers"][-1]["webhook_configs"][0]
    compose = compose_file(model)
    vllm, monitor = compose["services"]["vllm-pool"], compose["services"]["monitor"]
    assert "secrets" not in compose and "entrypoint" not in vllm and "secrets" not in monitor
    assert vllm["environment"]["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] == "http/protobuf"
    command = vllm["command"]
    at = command.index("--otlp-traces-endpoint")
    assert command[at + 1] == "${OTLP_TRACES_ENDPOINT:-http://127.0.0.1:9464/v1/traces}"
    assert compose["services"]["sim-pool"]["command"][-2:] == [
        "--otlp-traces-endpoint",
        "http://127.0.0.1:9464/v1/traces",
    ]
