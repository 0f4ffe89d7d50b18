"""A bounded property-based run against the two configuration loaders a service reads at start and
on every reload: ``load_model`` (the versioned YAML) and ``load_web_config`` (the exporter-toolkit
web config).

Inputs are garbage text and bytes, YAML-looking token soup, and valid files mutated at a random
place (a value replaced by one of the wrong type, a huge number, unicode, NUL, deep nesting; a key
deleted; an unknown key added). The contract, from ``monitor.errors.ConfigError``: the file loads,
or a ConfigError is raised whose every line starts with the file's name and (for a YAML mapping)
names the place in it. Any other exception fails the run, and hypothesis shows the input.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from monitor.errors import ConfigError
from monitor.model import load_model
from monitor.web.auth import hash_password
from monitor.web.config import load_web_config
from tests.service.live import TLS, make_tls

EXAMPLE = Path(__file__).parents[2] / "examples" / "monitor.yaml"
#: A small config with an RRULE maintenance window, so mutations reach the maintenance checks.
WITH_MAINTENANCE = """\
version: m3mon/v1
endpoints:
  - {name: pool-a, base_url: "http://127.0.0.1:8000", model: MiniMaxAI/MiniMax-M3, classes: [chat-32k]}
request_classes:
  - name: chat-32k
    max_context_tokens: 32768
    probes: [chat]
    slos: [{name: availability, sli: availability, objective: 99.9}]
maintenance:
  - {name: nightly, start: "2026-12-06T02:00:00Z", duration: 2h, rrule: FREQ=DAILY, classes: [chat-32k]}
"""
#: How many inputs each property tries (the fix note quotes them).
EXAMPLES = 100
EXAMPLE_MUTATIONS = 40
FUZZ = settings(max_examples=EXAMPLES, deadline=None, database=None, derandomize=True,
                suppress_health_check=[HealthCheck.too_slow])  # fmt: skip

ODD_TEXT = st.sampled_from(["", "9" * 400, "1e999", "-0", "99999999999999999999d", "0s", "-5m", "\x00",
                            "nul\x00byte", "🦄 ünïcödé", "\u202e", "s" * 5000, "http://[::1", "FREQ=SECONDLY",
                            "FREQ=DAILY;COUNT=999999999", "1970-01-01T00:00:00Z", "9999-12-31T23:59:59Z",
                            "$2y$10$" + "a" * 53, "TLS13", "RequireAnyClientCert", "~", "null"])  # fmt: skip
SCALAR = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**80), max_value=2**80),
    st.floats(),
    st.text(max_size=40),
    ODD_TEXT,
)
VALUE = st.recursive(
    SCALAR,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=10), inner, max_size=3),
    max_leaves=8,
) | st.integers(min_value=50, max_value=300).map(lambda depth: _nested(depth))
TOKENS = st.lists(
    st.sampled_from(
        [
            "version:",
            " m3mon/v1",
            "\n",
            "  ",
            "- ",
            ":",
            "[",
            "]",
            "{",
            "}",
            ",",
            "&a ",
            "*a",
            "!!python/object:os.system",
            "!!binary",
            "%YAML 1.1",
            "---",
            "...",
            "\t",
            "'",
            '"',
            "#",
            "endpoints:",
            "request_classes:",
            "slos:",
            "name: x",
            "? ",
            "|",
            ">",
            "\x00",
            "\ufeff",
            "basic_auth_users:",
            "tls_server_config:",
            "cert_file: x",
        ]
    ),
    max_size=40,
).map("".join)
GARBAGE = st.one_of(st.text(max_size=300), TOKENS, st.binary(max_size=300))


def _nested(depth: int) -> Any:
    value: Any = "deep"
    for _ in range(depth):
        value = [value]
    return value


def _paths(node: Any, at: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a YAML tree: keys of mappings and indexes of sequences."""
    found = [at] if at else []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else ()
    for key, child in items:
        found += _paths(child, (*at, key))
    return found


def _mutate(base: Any, path: tuple[Any, ...], op: str, value: Any, key: str) -> Any:
    doc = copy.deepcopy(base)
    parent = doc
    for part in path[:-1]:
        parent = parent[part]
    last = path[-1]
    if op == "replace":
        parent[last] = value
    elif op == "delete":
        del parent[last]
    elif isinstance(parent[last], dict):  # "add": an unknown key where keys are checked
        parent[last][key] = value
    else:
        parent[last] = {key: value}
    return doc


def _mutations(base: Any) -> st.SearchStrategy[Any]:
    return st.builds(
        _mutate,
        st.just(base),
        st.sampled_from(_paths(base)),
        st.sampled_from(["replace", "replace", "delete", "add"]),
        VALUE,
        st.text(min_size=1, max_size=12),
    )


def _write(path: Path, content: str | bytes | Any) -> None:
    if isinstance(content, bytes):
        path.write_bytes(content)
    elif isinstance(content, str):
        path.write_text(content, encoding="utf-8", errors="surrogatepass")
    else:
        path.write_text(yaml.safe_dump(content, allow_unicode=True, sort_keys=False), encoding="utf-8")


def _refused_by_name(load: Callable[[Path], Any], path: Path, field_named: bool) -> None:
    """``load(path)`` succeeds or raises ConfigError whose lines name the file (and the field)."""
    try:
        load(path)
    except ConfigError as exc:
        assert exc.problems, "a ConfigError with no problem lines"
        shape = rf"{re.escape(str(path))}(:\d+)?: " + (r".+: \S" if field_named else r"\S")
        for line in exc.problems:
            assert re.match(shape, line, re.DOTALL), line


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")


@FUZZ
@given(text=GARBAGE)
def test_garbage_is_a_config_error_naming_the_file(folder: Path, text: str | bytes) -> None:
    path = folder / "monitor.yaml"
    _write(path, text)
    _refused_by_name(load_model, path, field_named=False)


@FUZZ
@given(doc=_mutations(yaml.safe_load(WITH_MAINTENANCE)))
def test_a_mutated_small_config_loads_or_names_the_field(folder: Path, doc: Any) -> None:
    path = folder / "mutated-small.yaml"
    _write(path, doc)
    _refused_by_name(load_model, path, field_named=True)


@settings(FUZZ, max_examples=EXAMPLE_MUTATIONS)  # PyYAML reads the 118-line example in ~40 ms
@given(doc=_mutations(yaml.safe_load(EXAMPLE.read_text())))
def test_a_mutated_example_config_loads_or_names_the_field(folder: Path, doc: Any) -> None:
    path = folder / "mutated-example.yaml"
    _write(path, doc)
    _refused_by_name(load_model, path, field_named=True)


@pytest.fixture(scope="module")
def web_base(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tls: TLS = make_tls(tmp_path_factory.mktemp("tls"))
    tls_config = {"cert_file": str(tls.cert), "key_file": str(tls.key), "client_auth_type":
                  "RequireAndVerifyClientCert", "client_ca_file": str(tls.ca), "min_version": "TLS12",
                  "max_version": "TLS13"}  # fmt: skip
    return {"tls_server_config": tls_config, "basic_auth_users": {"m3mon": hash_password("pw", rounds=4)}}


def test_the_web_base_loads(folder: Path, web_base: dict[str, Any]) -> None:
    """The mutations below start from a file that loads (so they reach every check)."""
    _write(folder / "web-base.yml", web_base)
    web = load_web_config(folder / "web-base.yml")
    assert web.authenticates and web.tls is not None and [u for u, _ in web.users] == ["m3mon"]


@FUZZ
@given(text=GARBAGE)
def test_garbage_web_config_names_the_file(folder: Path, text: str | bytes) -> None:
    path = folder / "web.yml"
    _write(path, text)
    _refused_by_name(load_web_config, path, field_named=False)


@FUZZ
@given(data=st.data())
def test_a_mutated_web_config_loads_or_names_the_key(
    folder: Path, web_base: dict[str, Any], data: st.DataObject
) -> None:
    doc = data.draw(_mutations(web_base))
    path = folder / "web-mutated.yml"
    _write(path, doc)
    _refused_by_name(load_web_config, path, field_named=True)
