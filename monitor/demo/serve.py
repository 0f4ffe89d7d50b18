"""``m3mon demo --serve``: the demo's simulators again, where its configuration expects them.

The demo's simulators stop with the demo. This starts one per endpoint of the output folder's
``demo-config.yaml``, each on the port of its ``base_url`` and sized and seeded as in the demo,
exporting spans to the configured monitor's ``/v1/traces``, and serves until SIGINT or SIGTERM;
``m3mon run -c <out>/demo-config.yaml`` then watches them (and keeps writing into the demo's store).
"""

from __future__ import annotations

import logging
import os
import shlex
import shutil
import signal
import sys
import threading
from pathlib import Path
from urllib.parse import urlsplit

from monitor.errors import ServiceError, UsageError
from monitor.model import Model, load_model

CONFIG = "demo-config.yaml"


def invocation() -> str:
    """How this process was started, as a command to print: ``m3mon`` when that is what the
    shell finds, else the path it was started by (``.venv/bin/m3mon``), else ``python -m monitor``."""
    argv0 = sys.argv[0] if sys.argv else ""
    if Path(argv0).name == "m3mon":
        found = shutil.which("m3mon")
        if found and Path(found).resolve() == Path(argv0).resolve():
            return "m3mon"
        return shlex.quote(argv0)
    return f"{shlex.quote(sys.executable)} -m monitor"


def restart_hint(out: Path, exporter_listen: str) -> list[str]:
    """The lines that tell how to watch the demo's pools again after the demo."""
    m3mon, q = invocation(), shlex.quote(str(out))
    return [
        "  the simulators stopped with the demo; to watch its pools again, start them in one terminal:",
        f"    {m3mon} demo --serve --out {q}",
        "  and the monitor in another (it goes on writing into the demo's store):",
        f"    {m3mon} run -c {shlex.quote(str(out / CONFIG))}",
        f"  then read http://{exporter_listen}/metrics (Ctrl-C stops each)",
    ]


def _ports(model: Model) -> dict[str, int]:
    ports = {}
    for ep in model.endpoints:
        port = urlsplit(ep.base_url).port
        if port is None:
            raise UsageError(f"{model.source}: endpoint {ep.name}: base_url {ep.base_url} names no port")
        ports[ep.name] = port
    return ports


def serve_demo(out: Path) -> None:
    """Serve the demo's simulators until SIGINT or SIGTERM."""
    from monitor.demo.story import simulators

    config = out / CONFIG
    if not config.is_file():
        raise UsageError(f"{config}: no demo output here; run m3mon demo first, or pass its --out folder")
    model = load_model(config)
    ports = _ports(model)
    logging.getLogger("opentelemetry").setLevel(logging.CRITICAL)  # spans wait for the monitor quietly
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        with simulators(model, f"http://{model.exporter_listen}", ports) as sims:
            for name, sim in sims.items():
                print(f"m3mon demo: simulator for {name:<15} {sim.base_url}", flush=True)
            print(f"m3mon demo: serving until Ctrl-C; watch them with: {invocation()} run -c "
                  f"{shlex.quote(str(config))}", flush=True)  # fmt: skip
            while not stop.wait(0.5):
                pass
    except OSError as exc:
        taken = ", ".join(f"{n} {p}" for n, p in ports.items())
        raise ServiceError(f"cannot serve the demo's simulators on their ports ({taken}): "
                           f"{os.strerror(exc.errno) if exc.errno else exc}") from None  # fmt: skip
