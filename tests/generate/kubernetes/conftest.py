"""Fixtures: the real ``m3mon generate --target kubernetes`` (and the default target) on the example
configuration and on a variant with GPU exporters (dcgm and AMD), PostgreSQL and TLS credentials."""

from __future__ import annotations

import contextlib
import functools
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from monitor.cli import main

REPO = Path(__file__).resolve().parents[3]
EXAMPLE = REPO / "examples/monitor.yaml"
CRDS = REPO / "tests/fixtures/k8s-crds"


def generate_here(config: Path, out: Path, *extra: str) -> None:
    """``m3mon generate`` through the CLI's entry point in this process (no interpreter start), from
    the repository, as ``generated`` runs it (the banners name the config as given)."""
    with contextlib.chdir(REPO):
        status = main(["generate", "-c", str(config), "-o", str(out), *extra])
    assert status == 0, f"m3mon generate {extra} exited {status}"


def variant_config(path: Path) -> Path:
    """The example with GPU exporters, a PostgreSQL store, SMTP credentials and TLS to the monitor."""
    d = yaml.safe_load(EXAMPLE.read_text())
    d["endpoints"][0]["gpu_exporter"] = {"url": "http://127.0.0.1:9400/metrics", "kind": "dcgm"}
    d["endpoints"][1]["gpu_exporter"] = {"url": "http://127.0.0.1:5000/metrics", "kind": "amd"}
    d["storage"]["url"] = "postgresql+psycopg://m3mon@db.example:5432/m3mon"
    d["exporter"]["credentials"]["ca_file"] = "/run/secrets/ca.pem"
    d["alerting"]["monitor_receiver_url"] = "https://127.0.0.1:9464/alertmanager"
    d["report"]["smtp"] |= {"username_env": "SMTP_USER", "password_env": "SMTP_PASSWORD"}
    path.write_text(yaml.safe_dump(d, sort_keys=False))
    return path


@pytest.fixture(scope="session")
def outputs(tmp_path_factory: pytest.TempPathFactory, generated: Path) -> dict[str, tuple[Path, Path, Path]]:
    """``{name: (config, default target's DIR, DIR/kubernetes of the kubernetes target)}``; the
    example's default target is the session's ``generated``."""
    tmp = tmp_path_factory.mktemp("k8s")
    variant = variant_config(tmp / "variant.yaml")
    generate_here(variant, tmp / "variant-default")
    for name, config in (("example", Path("examples/monitor.yaml")), ("variant", variant)):
        generate_here(config, tmp / f"{name}-k8s", "--target", "kubernetes")
    return {
        "example": (EXAMPLE, generated, tmp / "example-k8s/kubernetes"),
        "variant": (variant, tmp / "variant-default", tmp / "variant-k8s/kubernetes"),
    }


@pytest.fixture(scope="session", params=["example", "variant"])
def case(
    request: pytest.FixtureRequest, outputs: dict[str, tuple[Path, Path, Path]]
) -> tuple[Path, Path, Path]:
    return outputs[request.param]


class _Loader(yaml.CSafeLoader):
    """PyYAML reads a bare ``=`` (an enum value in the AlertmanagerConfig CRD) as the YAML 1.1
    ``value`` type; it is the string ``=``."""


_Loader.add_constructor("tag:yaml.org,2002:value", lambda loader, node: loader.construct_scalar(node))


def load_all(text: str) -> list[dict[str, Any]]:
    return [d for d in yaml.load_all(text, Loader=_Loader) if d is not None]


@functools.cache
def objects(root: Path) -> list[dict[str, Any]]:
    """Every object in the YAML files under ``root`` that has a ``kind`` (kustomizations excluded).
    Read once per folder: callers copy before changing one."""
    out = []
    for path in sorted(root.rglob("*.yaml")):
        for doc in load_all(path.read_text()):
            if "apiVersion" in doc and doc.get("kind") != "Kustomization":
                out.append(doc)
    return out


def kustomize(folder: Path) -> list[dict[str, Any]]:
    proc = subprocess.run(["kubectl", "kustomize", str(folder)], capture_output=True, text=True,
                          timeout=60, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    return load_all(proc.stdout)


def of_kind(objs: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objs if o["kind"] == kind]


@pytest.fixture(scope="session")
def built(case: tuple[Path, Path, Path]) -> list[dict[str, Any]]:
    """``kubectl kustomize DIR/kubernetes``: every object, as applied."""
    return kustomize(case[2])
