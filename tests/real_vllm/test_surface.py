"""The real server's /metrics page: every family accounted for, both parsers agree, counts match.

Independent truth: the requests this test sends itself (their ``usage`` and ``finish_reason``
as the server answered them), and the page of an unmodified vLLM 0.32.0.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
import time
from typing import Any

from monitor.scrape.collector import read_text
from monitor.scrape.ignored import IGNORED_FAMILIES
from monitor.scrape.interval import signals
from monitor.scrape.names import CACHE_CONFIG_INFO, SOURCES
from monitor.scrape.page import parse
from tests.real_vllm.conftest import Real, wait_for_probe_round
from tests.real_vllm.stack import MAX_MODEL_LEN, SERVED
from tests.support import localhttp

N = 6
MAX_TOKENS = 8


def page(real: Real) -> str:
    return localhttp.get(f"{real.server.base_url}/metrics", timeout=10).text


def families(text: str) -> dict[str, str]:
    """``vllm:`` family name -> type, from the page's ``# TYPE`` lines (``_created`` gauges dropped)."""
    out = {}
    for line in text.splitlines():
        if line.startswith("# TYPE vllm:"):
            _, _, name, kind = line.split()
            out[name] = kind
    return out


def _chat(base_url: str, i: int) -> dict[str, Any]:
    body = {"model": SERVED, "max_tokens": MAX_TOKENS, "seed": i, "temperature": 1.0,
            "messages": [{"role": "user", "content": f"Count to {i + 3}, please."}]}  # fmt: skip
    response = localhttp.post(f"{base_url}/v1/chat/completions", json=body, timeout=60)
    assert response.status_code == 200, response.text
    return dict(response.json())


def test_every_family_is_mapped_or_deliberately_ignored(real: Real) -> None:
    mapped = {s.metric for s in SOURCES} | {CACHE_CONFIG_INFO}
    exposed = {n for n in families(page(real)) if not n.endswith("_created")}
    assert len(exposed) >= 30, sorted(exposed)
    unexplained = sorted(exposed - mapped - set(IGNORED_FAMILIES))
    assert unexplained == [], f"families neither mapped nor in IGNORED_FAMILIES: {unexplained}"
    stale = sorted(set(IGNORED_FAMILIES) & mapped)
    assert stale == [], f"mapped families also listed as ignored: {stale}"


def test_the_reasons_for_ignoring_hold_on_the_real_page(real: Real) -> None:
    from tests.scrape.test_ignored_reasons import problems

    assert problems(page(real)) == []


def test_both_parsers_read_the_same_signals(real: Real) -> None:
    text = page(real)
    at = time.time()
    fast = read_text(text, at, parser="fast")
    reference = read_text(text, at, parser="reference")
    assert signals("t", fast, None).to_dict(()) == signals("t", reference, None).to_dict(())
    fast_page, reference_page = parse(text, parser="fast"), parse(text, parser="reference")
    assert fast_page.types == reference_page.types and len(fast_page.samples) == len(reference_page.samples)


def test_counters_and_histograms_match_the_requests_sent(real: Real) -> None:
    wait_for_probe_round(real)  # the service's only probe round is over: the test's requests are alone
    before = read_text(page(real))
    answers = [_chat(real.server.base_url, i) for i in range(N)]
    over = localhttp.post(f"{real.server.base_url}/v1/chat/completions", timeout=60,
                      json={"model": SERVED, "max_tokens": 4,
                            "messages": [{"role": "user", "content": "word " * (MAX_MODEL_LEN + 50)}]})  # fmt: skip
    assert over.status_code == 400, over.text  # refused before the engine: counted nowhere below
    time.sleep(1.5)  # the engine's stats reach the API process's registry on its next logging step
    sig = signals("t", read_text(page(real)), before).total
    prompt = sum(a["usage"]["prompt_tokens"] for a in answers)
    completion = sum(a["usage"]["completion_tokens"] for a in answers)
    reasons: dict[str, float] = {}
    for a in answers:
        reason = a["choices"][0]["finish_reason"]
        reasons[reason] = reasons.get(reason, 0) + 1
    assert {k: v for k, v in sig.finished.items() if v} == reasons
    assert sig.prompt_tokens == prompt and sig.generation_tokens == completion
    for name in ("ttft", "e2e", "queue", "prefill", "decode", "inference", "tpot"):
        assert sig.histograms[name].count == N, name
    assert sig.histograms["prompt_tokens"].sum == prompt
    assert sig.histograms["generation_tokens"].sum == completion
    # vLLM's token buckets: 1, 2, 5, 10, 20, 50, ... while not above --max-model-len, then +Inf
    one_two_five = [m * 10**k for k in range(5) for m in (1, 2, 5) if m * 10**k <= MAX_MODEL_LEN]
    assert sig.histograms["prompt_tokens"].edges == (*one_two_five, math.inf)
    itl = sig.histograms["itl"]
    assert itl.count == completion - N  # one gap per token after the first


def test_scrape_command_shows_the_fingerprint_the_service_records(real: Real) -> None:
    done = subprocess.run([sys.executable, "-m", "monitor", "scrape", f"{real.server.base_url}/metrics", "--json"],
                          capture_output=True, text=True, timeout=60, check=True)  # fmt: skip
    fp = json.loads(done.stdout)["fingerprint"]
    version = localhttp.get(f"{real.server.base_url}/version", timeout=5).json()["version"]
    assert version.startswith("0.32") and fp["version"] == version
    assert fp["max_model_len"] == MAX_MODEL_LEN and fp["model"] == SERVED
    assert fp["block_size"] is not None and fp["cache_dtype"] is not None
    row = real.deployment()
    assert (row.vllm_version, row.max_model_len, row.block_size) == (version, MAX_MODEL_LEN, fp["block_size"])
