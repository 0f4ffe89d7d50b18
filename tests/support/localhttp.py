"""HTTP requests from a test to the servers it started (Prometheus, Alertmanager, the monitor,
the simulator), with one TLS context for the whole process.

``httpx.get`` builds a new client per call, and each new client builds an SSL context and loads
the CA bundle: about 20 ms of CPU even for a plain ``http://127.0.0.1`` URL. Tests that poll
(``wait_for``) or query every generated expression make thousands of such calls, so the suite
spent minutes of its two cores loading certificates. These functions take the same arguments as
httpx's and pass the process's one default context (a test that talks TLS passes its own
``verify``).
"""

from __future__ import annotations

import ssl
from typing import Any

import httpx

_TLS = ssl.create_default_context()


def get(url: str, **kwargs: Any) -> httpx.Response:
    kwargs.setdefault("verify", _TLS)
    return httpx.get(url, **kwargs)


def post(url: str, **kwargs: Any) -> httpx.Response:
    kwargs.setdefault("verify", _TLS)
    return httpx.post(url, **kwargs)
