"""OpenSLO export: round trip config -> OpenSLO -> config, and the exports against the spec's schema.

The schema is the OpenSLO repository's own v1 JSON schema (tests/openslo/SOURCE.md), resolved
from the copies here; that it really rejects documents is checked on a policy with two conditions
and on the spec's own example documents, which it accepts.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml
from referencing import Registry, Resource

from monitor.cli import main
from monitor.model import Model, load_model
from monitor.openslo.export import documents

HERE = Path(__file__).parent
ROOT = HERE.parent.parent
CONFIGS = [ROOT / "examples" / "monitor.yaml", HERE / "configs" / "other.yaml"]


def _validator() -> jsonschema.Draft7Validator:
    resources = []
    for path in sorted((HERE / "schema" / "v1").rglob("*.json")):
        schema = json.loads(path.read_text(encoding="utf-8"))
        resources.append((schema["$id"], Resource.from_contents(schema)))
    registry: Registry[Any] = Registry().with_resources(resources)
    root = json.loads((HERE / "schema" / "v1" / "openslo.schema.json").read_text(encoding="utf-8"))
    return jsonschema.Draft7Validator(root, registry=registry)


def _export_import(config: Path, out: Path, base: Path | None) -> Model:
    assert main(["openslo", "export", "-c", str(config), "-o", str(out / "docs")]) == 0
    files = sorted(str(p) for p in (out / "docs").glob("*.yaml"))
    args = ["openslo", "import", *files, "-o", str(out / "back.yaml")]
    assert main(args + (["--base", str(base)] if base else [])) == 0
    return load_model(out / "back.yaml")


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.name)
def test_round_trip_without_base_keeps_classes_slos_and_endpoints(config: Path, tmp_path: Path) -> None:
    original, back = load_model(config), _export_import(config, tmp_path, None)
    assert back.classes == original.classes
    assert back.endpoints == original.endpoints


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.name)
def test_round_trip_with_base_is_the_same_model(config: Path, tmp_path: Path) -> None:
    original, back = load_model(config), _export_import(config, tmp_path, config)
    assert dataclasses.replace(back, source="") == dataclasses.replace(original, source="")


@pytest.mark.parametrize("config", CONFIGS, ids=lambda p: p.name)
def test_every_exported_document_validates_against_the_openslo_v1_schema(config: Path) -> None:
    validator = _validator()
    docs = [doc for group in documents(load_model(config)).values() for doc in group]
    assert {d["kind"] for d in docs} == {
        "Service",
        "DataSource",
        "SLO",
        "AlertPolicy",
        "AlertNotificationTarget",
    }
    for doc in docs:
        errors = [e.message for e in validator.iter_errors(doc)]
        assert errors == [], (doc["kind"], doc["metadata"]["name"], errors)


def test_the_schema_accepts_the_spec_examples_and_rejects_a_broken_policy() -> None:
    validator = _validator()
    policies = yaml.safe_load((HERE / "golden" / "v1" / "alert_policies.yaml").read_text(encoding="utf-8"))
    # Of the spec's later examples, services and alert conditions still match the 2024-08 schema (data
    # sources now write connectionDetails as a list, policies leave out alertWhenNoData/…Resolved).
    for name in ("services", "alert_conditions"):
        for doc in yaml.safe_load((HERE / "golden" / "v1" / f"{name}.yaml").read_text(encoding="utf-8")):
            assert validator.is_valid(doc), doc
    broken = policies[1]
    broken["spec"]["conditions"] = [{"conditionRef": "a"}, {"conditionRef": "b"}]  # the schema allows one
    assert not validator.is_valid(broken)


def test_export_writes_names_without_underscores_and_keeps_the_exact_ones(tmp_path: Path) -> None:
    docs = documents(load_model(HERE / "configs" / "other.yaml"))
    slo = next(
        d for d in docs["slos.yaml"] if d["metadata"]["annotations"]["m3mon.dev/name"] == "avail_server"
    )
    assert slo["metadata"]["name"] == "batch-jobs-avail-server"
    assert slo["spec"]["service"] == "batch-jobs"
    assert slo["spec"]["timeWindow"] == [{"duration": "28d", "isRolling": True}]
    # 28d: 2 % of the budget in 1h is a burn rate of 0.02 * 672h / 1h = 13.44
    policy = next(
        p for p in docs["alert-policies.yaml"] if p["metadata"]["name"] == "m3mon-burn-page-1h-5m-28d"
    )
    condition = policy["spec"]["conditions"][0]["spec"]["condition"]
    assert condition == {"kind": "burnrate", "op": "gt", "threshold": pytest.approx(13.44), "lookbackWindow": "1h",
                         "alertAfter": "5m"}  # fmt: skip


def test_the_promql_alone_identifies_each_sli(tmp_path: Path) -> None:
    """Without the m3mon.dev/sli hints, every SLI is attributed from its queries alone."""
    config = ROOT / "examples" / "monitor.yaml"
    assert main(["openslo", "export", "-c", str(config), "-o", str(tmp_path)]) == 0
    slos = tmp_path / "slos.yaml"
    docs = list(yaml.safe_load_all(slos.read_text(encoding="utf-8")))
    for doc in docs:
        del doc["metadata"]["annotations"]["m3mon.dev/sli"]
    slos.write_text(yaml.safe_dump_all(docs), encoding="utf-8")
    files = sorted(str(p) for p in tmp_path.glob("*.yaml"))
    assert main(["openslo", "import", *files, "-o", str(tmp_path / "back.yaml")]) == 0
    assert load_model(tmp_path / "back.yaml").classes == load_model(config).classes


def test_page_within_is_exported_as_its_own_lower_page_threshold(tmp_path: Path) -> None:
    """Issue 23: the export ignored ``page_within``: an SLO that pages a total outage within
    10 min was written with the workbook's 14.4× first page row. Its policy now carries the factor
    the generated rule uses: (page_within − half a step) / (error budget × long window) =
    (600 − 30) / (0.0275 × 3600) = 5.7576×, and the import gives ``page_within`` back."""
    config = HERE / "configs" / "other.yaml"
    assert main(["openslo", "export", "-c", str(config), "-o", str(tmp_path)]) == 0
    slos = list(yaml.safe_load_all((tmp_path / "slos.yaml").read_text(encoding="utf-8")))
    (slo,) = [s for s in slos if s["metadata"]["name"] == "chat.fast-correct"]
    assert slo["metadata"]["annotations"]["m3mon.dev/page-within"] == "10m"
    first = slo["spec"]["alertPolicies"][0]
    assert first == "m3mon-burn-page-1h-5m-30d-within-10m-at-97p25"
    policies = {
        p["metadata"]["name"]: p for p in yaml.safe_load_all((tmp_path / "alert-policies.yaml").read_text())
    }
    condition = policies[first]["spec"]["conditions"][0]["spec"]["condition"]
    assert condition["threshold"] == pytest.approx(570 / (0.0275 * 3600))
    assert slo["spec"]["alertPolicies"][1:] == [
        "m3mon-burn-page-6h-30m-30d", "m3mon-burn-ticket-1d-2h-30d", "m3mon-burn-ticket-3d-6h-30d"
    ]  # fmt: skip
