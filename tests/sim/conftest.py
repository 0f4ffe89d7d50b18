"""Fixtures for the simulator tests: a fast simulator per test and small helpers."""

from __future__ import annotations

import base64
import io
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from PIL import Image
from prometheus_client.parser import text_string_to_metric_families

from monitor.sim.harness import SimHandle, running_simulator

MODEL = "MiniMaxAI/MiniMax-M3"
FAST: dict[str, Any] = {"decode_itl": 0.002, "prefill_overhead": 0.001, "jitter": 0.0}
#: One shared HTTP client (building a client per call costs tens of milliseconds).
HTTP = httpx.Client(timeout=20)


@pytest.fixture(scope="session", autouse=True)
def _close_http() -> Iterator[None]:
    yield
    HTTP.close()


@pytest.fixture
def sim() -> Iterator[SimHandle]:
    with running_simulator(**FAST) as handle:
        yield handle


@pytest.fixture
def client(sim: SimHandle) -> Iterator[openai.OpenAI]:
    c = openai.OpenAI(base_url=f"{sim.base_url}/v1", api_key="unused", max_retries=0, timeout=20)
    yield c
    c.close()


def ask(text: str, **extra: Any) -> dict[str, Any]:
    """A chat request body asking ``text``."""
    return {"model": MODEL, "messages": [{"role": "user", "content": text}], **extra}


def samples(base_url: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    """Every sample of ``/metrics`` keyed by (sample name, sorted labels)."""
    text = HTTP.get(f"{base_url}/metrics").text
    out = {}
    for fam in text_string_to_metric_families(text):
        for s in fam.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def value(base_url: str, name: str, **labels: str) -> float:
    """The sum of ``name`` samples whose labels include ``labels``."""
    return sum(
        v for (n, lab), v in samples(base_url).items() if n == name and set(labels.items()) <= set(lab)
    )


def png_data_url(rgb: tuple[int, int, int], size: tuple[int, int] = (56, 56)) -> str:
    buf = io.BytesIO()
    Image.new("RGB", size, rgb).save(buf, format="PNG")
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()
