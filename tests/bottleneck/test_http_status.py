"""The API server's own answers as verdict evidence, from real pages (tests/fixtures/metrics: the
vLLM 0.13.0 and SGLang 0.5.23 captures, their ``http_*`` families emitted by the packages
themselves) edited the way a failing or shedding server's pages differ. The oracle is the
counters' definition: prometheus-fastapi-instrumentator counts each answer once under its handler
and its status class; SGLang counts exact status codes. Only the inference routes are the pool's.
"""

from __future__ import annotations

from pathlib import Path

from monitor.bottleneck.evidence import gather
from monitor.bottleneck.inputs import Inputs, Objectives, PoolPoint
from monitor.bottleneck.rules import decide
from monitor.scrape.interval import signals
from monitor.scrape.page import parse
from monitor.scrape.reading import read_page

PAGES = Path(__file__).resolve().parents[1] / "fixtures/metrics"
VLLM = (PAGES / "vllm-0.13.0.metrics.txt").read_text()
SGLANG = (PAGES / "sglang-0.5.23.metrics.txt").read_text()
CHAT = 'http_requests_total{handler="/v1/chat/completions",method="POST",status="2xx"} 200.0'
SG_CHAT = 'sglang:http_responses_total{endpoint="/v1/chat/completions",method="POST",status_code="200"} 207.0'


def _vllm(ok: float, failed: float, health: float = 0.0) -> str:
    lines = [
        f'http_requests_total{{handler="/v1/chat/completions",method="POST",status="2xx"}} {ok}',
        f'http_requests_total{{handler="/v1/chat/completions",method="POST",status="5xx"}} {failed}',
        f'http_requests_total{{handler="/health",method="GET",status="5xx"}} {health}',
    ]
    assert CHAT in VLLM
    return VLLM.replace(CHAT, "\n".join(lines))


def _sglang(ok: float, refused: float) -> str:
    assert SG_CHAT in SGLANG
    extra = SG_CHAT.replace('status_code="200"', 'status_code="429"').replace("207.0", str(refused))
    return SGLANG.replace(SG_CHAT, SG_CHAT.replace("207.0", str(ok)) + "\n" + extra)


def _interval(older: str, newer: str, t: float) -> dict[str, float]:
    a, b = read_page(parse(older), t - 15), read_page(parse(newer), t)
    return signals("pool", b, a).total.http_status


def test_the_pages_answers_per_interval_on_inference_routes_only() -> None:
    """The increase of each status on /v1/chat/completions; /health's failures are not the pool's."""
    assert _interval(_vllm(200, 0, 0), _vllm(260, 30, 500), 1015.0) == {"2xx": 60.0, "5xx": 30.0}
    assert _interval(_sglang(207, 0), _sglang(300, 40), 1015.0) == {"200": 93.0, "429": 40.0}


def _causes(statuses: list[dict[str, float]]) -> list[tuple[str, str]]:
    """The causes of a pool whose scrape intervals of the last minute answered ``statuses``."""
    end = 10_000.0
    points = tuple(PoolPoint("ep", end - 15 * k, 60.0, http_status=s) for k, s in enumerate(statuses))
    v = decide(gather(Inputs("chat", end, objectives=Objectives(2.5, 30.0), pool=points)))
    return [(c.verdict, c.source) for c in v.causes]


def test_a_share_of_errors_is_a_cause_and_one_error_is_not() -> None:
    failing = [
        _interval(_vllm(200 + 60 * k, 5 * k), _vllm(260 + 60 * k, 5 * (k + 1)), 1015.0) for k in range(4)
    ]
    assert ("retry_storm", "server histograms") in _causes(failing)
    one = [{"2xx": 60.0, "5xx": 1.0}] + [{"2xx": 60.0}] * 3
    assert _causes(one) == []
    # 4xx from vLLM is no shedding: it holds bad requests too (its refusals are admission_rejections)
    assert _causes([{"2xx": 60.0, "4xx": 30.0}] * 4) == []
    refusing = [_interval(_sglang(207, 0), _sglang(300, 40), 1015.0)] * 2
    assert ("load_shedding", "server histograms") in _causes(refusing)
