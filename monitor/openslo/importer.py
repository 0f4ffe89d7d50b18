"""``m3mon openslo import``: OpenSLO v1/v1alpha documents -> an m3mon/v1 configuration.

What maps (module docstring of :mod:`monitor.openslo`) becomes request classes, SLOs and
endpoints; the sections OpenSLO does not describe (storage, exporter, alerting, report) and the
settings of classes without ``m3mon.dev/…`` annotations come from ``--base``, a configuration
whose same-named classes the imported ones replace. Everything that does not map is refused,
each refusal naming the document and the field; nothing is written then.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from monitor.config import EndpointSpec, parse_config
from monitor.config_service import AlertingSpec, sqlite_beside
from monitor.errors import ConfigError
from monitor.openslo import documents as d
from monitor.openslo.mapping import Index, map_slo
from monitor.openslo.queries import Scope
from monitor.openslo.reader import read

ENDPOINT_TYPES = {"vllm": "vllm", "sglang": "sglang"}


def _class_settings(doc: d.Document | None, base: dict[str, Any] | None) -> dict[str, Any] | None:
    if doc is not None and doc.annotation(d.A_MAX_CONTEXT) is not None:
        out: dict[str, Any] = {"max_context_tokens": int(doc.annotation(d.A_MAX_CONTEXT) or 0)}
        out["probes"] = (doc.annotation(d.A_PROBES) or "").split(",")
        probe = {}
        for key in ("interval", "timeout", "jitter", "long_prompt_tokens", "tool_delay", "agent_rounds"):
            value = doc.annotation(d.A_PROBE + key)
            if value is not None:
                probe[key] = int(value) if value.isdigit() else value
        out["probe"] = probe
        out["dedicated_pool"] = doc.annotation(d.A_DEDICATED) == "true"
        if (below := doc.annotation(d.A_FREEZE_BELOW)) is not None:
            page = doc.annotation(d.A_FREEZE_PAGE)
            out["budget_policy"] = {"freeze_below": below, "freeze_on_page_burn": page != "false"}
        return out
    if base is not None:
        return {k: v for k, v in base.items() if k not in ("name", "slos", "description")}
    return None


def _endpoints(index: Index, problems: d.Problems) -> list[dict[str, Any]]:
    out = []
    for doc in index.by_kind["DataSource"].values():
        kind = str(doc.spec.get("type", ""))
        if kind.lower() == "prometheus":
            continue
        if kind.lower() not in ENDPOINT_TYPES:
            problems.add(
                doc, "spec.type", f"a {kind!r} data source does not map (Prometheus, vLLM or SGLang)"
            )
            continue
        details = doc.spec.get("connectionDetails")
        if not isinstance(details, dict):
            problems.add(
                doc, "spec.connectionDetails", "a vLLM/SGLang endpoint needs base_url, model and classes"
            )
            continue
        endpoint = {"name": doc.m3mon_name, "backend": ENDPOINT_TYPES[kind.lower()], **details}
        try:
            EndpointSpec.model_validate(endpoint)
        except ValidationError as exc:
            for err in exc.errors():
                where = ".".join(str(p) for p in err["loc"])
                problems.add(doc, f"spec.connectionDetails.{where}", str(err["msg"]))
            continue
        out.append(endpoint)
    return out


def _unused(index: Index, problems: d.Problems) -> None:
    for kind in ("AlertPolicy", "AlertCondition", "SLI"):
        for name, doc in index.by_kind[kind].items():
            if (kind, name) not in index.used:
                problems.add(
                    doc, "metadata.name", f"this {kind} is used by no SLO: m3mon alerts and measures per SLO"
                )


def _scope(endpoints: list[Any], base: dict[str, Any] | None) -> Scope:
    """Whose series the imported configuration's rules read: the jobs of ``base``'s alerting
    section (or the defaults), and the endpoints serving each class."""
    alerting = (base or {}).get("alerting")
    given = alerting if isinstance(alerting, dict) else {}
    jobs = {
        key: str(given.get(key, AlertingSpec.model_fields[key].default))
        for key in ("prometheus_job_monitor", "prometheus_job_vllm")
    }
    served: dict[str, set[str]] = {}
    for ep in endpoints:
        classes = ep.get("classes") if isinstance(ep, dict) else None
        for cls in classes if isinstance(classes, list) else []:
            served.setdefault(str(cls), set()).add(str(ep.get("name")))
    return Scope(
        jobs["prometheus_job_monitor"],
        jobs["prometheus_job_vllm"],
        {cls: frozenset(names) for cls, names in served.items()},
    )


def _classes(
    classes: dict[str, dict[str, Any]],
    referenced: set[str],
    base_classes: dict[str, Any],
    problems: d.Problems,
) -> list[dict[str, Any]]:
    """The imported classes: their settings, description and SLOs."""
    out_classes = []
    for name, entry in classes.items():
        sdoc = entry["doc"]
        if name not in referenced:
            problems.add(
                sdoc, "metadata.name", "no SLO document names this service: an m3mon class needs SLOs"
            )
            continue
        settings = _class_settings(sdoc, base_classes.get(name))
        if settings is None:
            problems.add(
                sdoc,
                f"metadata.annotations.{d.A_MAX_CONTEXT}",
                "no m3mon class settings: annotate the Service or give --base with this class",
            )
            continue
        described = sdoc.spec.get("description") if sdoc else base_classes.get(name, {}).get("description")
        out_classes.append(
            {
                "name": name,
                **settings,
                **({"description": described} if described else {}),
                "slos": entry["slos"],
            }
        )
    return out_classes


def build(docs: list[d.Document], base: dict[str, Any] | None, problems: d.Problems) -> dict[str, Any]:
    """The configuration as a mapping (not yet validated)."""
    index = Index(docs)
    base_classes = {
        str(c.get("name")): c for c in (base or {}).get("request_classes") or [] if isinstance(c, dict)
    }
    endpoints = _endpoints(index, problems) or list((base or {}).get("endpoints") or [])
    scope = _scope(endpoints, base)
    classes: dict[str, dict[str, Any]] = {}
    referenced: set[str] = set()
    for sdoc in index.by_kind["Service"].values():
        classes[sdoc.m3mon_name] = {"name": sdoc.m3mon_name, "doc": sdoc, "slos": []}
    for doc in index.slos:
        inp = read(doc, index.by_kind["SLI"], problems)
        service = index.get("Service", inp.service)
        cls = service.m3mon_name if service else inp.service
        referenced.add(cls)
        if "indicatorRef" in doc.spec:
            index.get("SLI", str(doc.spec["indicatorRef"]))
        slo = map_slo(inp, cls, index, problems, scope)
        if cls not in classes and cls not in base_classes:
            problems.add(
                doc, "spec.service", f"no Service document {inp.service!r} and no such class in --base"
            )
        elif slo is not None:
            classes.setdefault(cls, {"name": cls, "doc": None, "slos": []})["slos"].append(slo)
    _unused(index, problems)
    imported = {c["name"]: c for c in _classes(classes, referenced, base_classes, problems)}
    kept = [imported.pop(n, c) for n, c in base_classes.items()]
    config: dict[str, Any] = {"version": "m3mon/v1", "endpoints": endpoints}
    config["request_classes"] = kept + list(imported.values())
    for key, value in (base or {}).items():
        config.setdefault(key, value)
    return config


#: Sections a configuration has that OpenSLO does not describe: from ``--base``, else defaults.
NOT_IN_OPENSLO = ("storage", "exporter", "alerting", "report")


def rebase(base: dict[str, Any], folder: Path) -> dict[str, Any]:
    """``base`` with the paths it names relative to its own file (a relative SQLite store,
    ``exporter.web_config_file``, ``maintenance_file``) made absolute, so the imported
    configuration, written elsewhere, names the same files."""
    out = dict(base)

    def absolute(path: str) -> str:
        return path if Path(path).is_absolute() else os.path.abspath(folder / path)

    storage = out.get("storage")
    if isinstance(storage, dict) and isinstance(url := storage.get("url"), str):
        out["storage"] = {**storage, "url": sqlite_beside(url, folder)}
    exporter = out.get("exporter")
    if isinstance(exporter, dict) and isinstance(web := exporter.get("web_config_file"), str):
        out["exporter"] = {**exporter, "web_config_file": absolute(web)}
    if isinstance(maintenance := out.get("maintenance_file"), str):
        out["maintenance_file"] = absolute(maintenance)
    return out


def defaulted(base: dict[str, Any] | None) -> list[str]:
    """The sections OpenSLO cannot give that the result takes from m3mon's defaults."""
    return [key for key in NOT_IN_OPENSLO if key not in (base or {})]


def import_files(paths: Iterable[str | Path], base_path: str | Path | None, out_name: str) -> str:
    """The configuration text for ``paths``; raises ConfigError listing every refusal."""
    problems = d.Problems()
    docs = d.check_kinds(d.load_documents(paths), problems)
    base = None
    if base_path is not None:
        try:
            base = yaml.safe_load(Path(base_path).read_text(encoding="utf-8"))
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError([f"{base_path}: cannot read the --base configuration: {exc}"]) from None
    if isinstance(base, dict) and base_path is not None:
        base = rebase(base, Path(base_path).parent)
    config = build(docs, base if isinstance(base, dict) else None, problems)
    problems.raise_any()
    if not config["endpoints"]:
        raise ConfigError(
            [f"{out_name}: no endpoints: add DataSource documents of type vLLM/SGLang or give --base"]
        )
    text = yaml.safe_dump(config, sort_keys=False, allow_unicode=True)
    parse_config(text, out_name)  # the result must be a valid configuration
    missing = defaulted(base if isinstance(base, dict) else None)
    note = f"# Defaults, not from OpenSLO or --base: {', '.join(missing)}.\n" if missing else ""
    return f"# Imported from OpenSLO by m3mon openslo import.\n{note}{text}"
