"""A real Prometheus for tests: started on a free loopback port, ready before use, always stopped.

``running_prometheus`` waits (bounded) until ``/-/ready`` answers 200: until then Prometheus
answers queries with a plain-text "Service Unavailable", which is not a query result.
``query`` raises on anything but a successful API answer, so a failing query is never read as
"no series yet" by accident; ``wait_for`` retries only while the server is unreachable or the
result is empty.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from tests.support import localhttp
from tests.support.real import require_binary


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@contextlib.contextmanager
def running_prometheus(
    config: dict[str, Any], tmp: Path, ready_timeout: float = 30.0, extra_args: tuple[str, ...] = ()
) -> Iterator[str]:
    """Prometheus with ``config`` (written to ``tmp``) and ``extra_args`` (e.g. a feature flag);
    yields its base URL once ready."""
    binary = require_binary("prometheus", "/usr/bin/prometheus")
    (tmp / "prometheus.yml").write_text(yaml.safe_dump(config))
    port = free_port()
    args = [binary, f"--config.file={tmp / 'prometheus.yml'}", f"--storage.tsdb.path={tmp / 'data'}",
            f"--web.listen-address=127.0.0.1:{port}", *extra_args]  # fmt: skip
    with (tmp / "prometheus.log").open("ab") as log:
        proc = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: _ready(url, proc, tmp), ready_timeout, "Prometheus /-/ready")
        yield url
    finally:
        stop(proc)


def query(url: str, expr: str) -> list[dict[str, Any]]:
    """The instant-query result of ``expr``; fails the test on an API error."""
    response = localhttp.get(f"{url}/api/v1/query", params={"query": expr}, timeout=10)
    if response.headers.get("content-type", "").split(";")[0] != "application/json":
        raise httpx.HTTPError(f"Prometheus answered {response.status_code} {response.text[:80]!r}")
    body = response.json()
    assert body["status"] == "success", f"{expr!r}: {body.get('error')}"
    result = body["data"]["result"]
    return result if isinstance(result, list) else [result]


def wait_for(check: Callable[[], Any], timeout: float, what: str, every: float = 0.5) -> Any:
    """Poll ``check`` until truthy; unreachable-server errors count as "not yet"."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = check()
        except (httpx.HTTPError, OSError) as exc:
            last = exc
        else:
            if last:
                return last
        time.sleep(every)
    pytest.fail(f"timed out after {timeout}s waiting for {what} (last: {last!r:.300})")


def _ready(url: str, proc: subprocess.Popen[bytes], tmp: Path) -> bool:
    if proc.poll() is not None:
        log = (tmp / "prometheus.log").read_text(errors="replace")[-2000:]
        pytest.fail(f"Prometheus exited with {proc.returncode}:\n{log}")
    return localhttp.get(f"{url}/-/ready", timeout=2).status_code == 200


def stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(5)
