"""A real Alertmanager for tests: started on a free loopback port, ready before use, always stopped."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import yaml

from tests.support import localhttp
from tests.support.prometheus import free_port, stop, wait_for
from tests.support.real import require_binary


@contextmanager
def running_alertmanager(config: dict[str, Any], tmp: Path) -> Iterator[str]:
    """Alertmanager with ``config`` (written to ``tmp/am.yml``, log in ``tmp/am.log``); yields its URL."""
    binary = require_binary("prometheus-alertmanager", "/usr/bin/prometheus-alertmanager")
    (tmp / "am.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    with (tmp / "am.log").open("ab") as log:
        proc = subprocess.Popen([binary, f"--config.file={tmp / 'am.yml'}", f"--storage.path={tmp / 'am'}",
                                 f"--web.listen-address=127.0.0.1:{port}", "--cluster.listen-address="],
                                stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: proc.poll() is None and localhttp.get(f"{url}/-/ready", timeout=2).status_code == 200,
                 20, "Alertmanager /-/ready")  # fmt: skip
        yield url
    finally:
        stop(proc)
