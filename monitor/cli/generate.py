"""``m3mon generate -c FILE -o DIR``: write rules, routing, runbooks, dashboards and compose files."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from monitor.generate.kubernetes.defaults import DEFAULT_IMAGE, DEFAULT_NAMESPACE, DEFAULT_RELEASE


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "generate",
        help="generate Prometheus rules, Alertmanager routing, Grafana dashboards and compose.yaml",
        description="Generate alerts/*.rules.yml, alerts/alertmanager.yml, alerts/runbooks/, dashboards/, "
        "deploy/ and compose.yaml under DIR from the configuration FILE. Nothing is written unless "
        "everything could be generated. DIR is created if its parent folder exists.",
    )
    p.add_argument("-c", "--config", required=True, metavar="FILE", help="configuration file (m3mon/v1)")
    p.add_argument("-o", "--output", default=".", metavar="DIR", help="output directory (default: .)")
    p.add_argument(
        "--target",
        choices=("default", "kubernetes"),
        default="default",
        help="default: the files above; kubernetes: DIR/kubernetes/, prometheus-operator objects, "
        "dashboard ConfigMaps and a kustomize base of the monitor (docs/kubernetes.md)",
    )
    p.add_argument("--namespace", default=DEFAULT_NAMESPACE, metavar="NS",
                   help=f"kubernetes: the objects' namespace (default {DEFAULT_NAMESPACE})")  # fmt: skip
    p.add_argument("--release", default=DEFAULT_RELEASE, metavar="NAME",
                   help="kubernetes: the release label the operator's rule, ServiceMonitor and PodMonitor "
                   f"selectors match (default {DEFAULT_RELEASE}, kube-prometheus-stack's)")  # fmt: skip
    p.add_argument("--image", default=DEFAULT_IMAGE, metavar="IMAGE",
                   help=f"kubernetes: the monitor's image (default {DEFAULT_IMAGE})")  # fmt: skip
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from monitor.errors import ConfigError
    from monitor.generate.output import rendered_files, write_files
    from monitor.model import load_model

    model = load_model(args.config)
    out = _output(args.output)
    try:
        text = Path(args.config).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError([f"{args.config}: cannot read: {exc}"]) from exc
    source = Path(args.config).as_posix()
    if args.target == "kubernetes":
        from monitor.generate.kubernetes.common import Options
        from monitor.generate.kubernetes.files import kubernetes_files

        options = Options(
            namespace=_dns(args.namespace, "--namespace"), release=args.release, image=args.image
        )
        files = kubernetes_files(model, source, text, options)
    else:
        files = rendered_files(model, source, text)
    written = write_files(files, out)
    print(f"m3mon generate: wrote {len(written)} files under {args.output}")
    return 0


def _dns(value: str, flag: str) -> str:
    import re

    from monitor.errors import UsageError

    if not re.fullmatch(r"[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?", value):
        raise UsageError(f"{flag}: {value!r} is not a DNS-1123 label (lowercase letters, digits, '-')")
    return value


def _output(value: str) -> Path:
    """The output folder: an existing folder, or a new one in an existing folder (a mistyped
    ``-o`` must not create a tree of folders somewhere unexpected)."""
    from monitor.errors import UsageError

    out = Path(value)
    if out.exists() and not out.is_dir():
        raise UsageError(f"-o: {value} is not a directory")
    parent = out.absolute().parent
    if not out.exists() and not parent.is_dir():
        raise UsageError(f"-o: {parent} does not exist (generate creates DIR, not its parents)")
    return out
