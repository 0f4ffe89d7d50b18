"""``m3mon openslo import|export``: SLOs as OpenSLO documents, in and out (:mod:`monitor.openslo`).

``import FILE... -o monitor.yaml [--base CONFIG]`` reads OpenSLO v1 and v1alpha documents and
writes an m3mon/v1 configuration; every document or field that does not map is refused by name
and nothing is written (exit 2). ``export -c CONFIG -o DIR`` writes v1 documents (exit 0).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "openslo",
        help="import or export SLOs as OpenSLO documents",
        description="Move SLOs between m3mon and other OpenSLO tools.",
    )
    actions = p.add_subparsers(dest="openslo_command", metavar="ACTION", required=True)
    im = actions.add_parser(
        "import",
        help="OpenSLO v1/v1alpha documents -> an m3mon/v1 configuration",
        description="Read OpenSLO v1 and v1alpha documents (YAML streams or lists) and write an m3mon/v1 "
        "configuration. Documents or fields that do not map are refused, each by file, document and "
        "field, and nothing is written (exit 2).",
    )
    im.add_argument("files", nargs="+", metavar="FILE", help="OpenSLO YAML files")
    im.add_argument(
        "-o", "--output", required=True, metavar="FILE", help="configuration to write ('-': stdout)"
    )
    im.add_argument(
        "--base",
        metavar="CONFIG",
        help="configuration giving what OpenSLO does not describe (endpoints, storage, alerting, report, "
        "settings of classes without m3mon.dev/ annotations); its same-named classes are replaced",
    )
    im.set_defaults(func=run_import)
    ex = actions.add_parser(
        "export",
        help="every class, SLO and burn alert as OpenSLO v1 documents",
        description="Write OpenSLO v1 documents (Service, DataSource, SLO, AlertPolicy, "
        "AlertNotificationTarget) for the configuration's classes, endpoints, SLOs and burn alerts into DIR.",
    )
    ex.add_argument("-c", "--config", required=True, metavar="FILE", help="configuration file")
    ex.add_argument("-o", "--output", required=True, metavar="DIR", help="folder to write the documents into")
    ex.set_defaults(func=run_export)


def run_import(args: argparse.Namespace) -> int:
    from monitor.openslo.importer import defaulted, import_files

    name = "<stdout>" if args.output == "-" else args.output
    text = import_files(args.files, args.base, name)
    if args.base is None:
        print(
            f"m3mon openslo import: note: without --base, {', '.join(defaulted(None))} take m3mon's "
            "defaults (alerts route to receivers 'pager' and 'chat' with no webhook: nobody is paged); "
            "give --base CONFIG to keep yours",
            file=sys.stderr,
        )
    if args.output == "-":
        sys.stdout.write(text)
    else:
        Path(args.output).write_text(text, encoding="utf-8")
        print(f"wrote {args.output} from {len(args.files)} OpenSLO file(s)")
    return 0


def run_export(args: argparse.Namespace) -> int:
    from monitor.model import load_model
    from monitor.openslo.export import write

    model = load_model(args.config)
    for path in write(model, args.output):
        print(f"wrote {path}")
    if model.maintenance:
        names = ", ".join(w.name for w in model.maintenance.windows)
        print(
            f"m3mon openslo export: note: maintenance windows ({names}) have no OpenSLO v1 kind and were "
            "not exported",
            file=sys.stderr,
        )
    return 0
