"""``m3mon profile`` and the contract's context ceiling against a store holding hand-written rows:
every learned field checked against values computed by hand from the rows (docs/contract.md's
definitions), not by the learning code."""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from monitor.cli import main
from monitor.replay.profile import load_profile
from monitor.store.migrate import upgrade
from monitor.store.repos import EndpointRepo
from monitor.store.store import Store
from monitor.store.tables import ProbeResultRow, ScrapeIntervalRow
from tests.support.configs import service_sections

AT = 10_000.0  # --at: the window is (AT - 1h, AT]


def _config(folder: Path) -> Path:
    path = folder / "m3mon.yaml"
    path.write_text(textwrap.dedent("""\
        version: m3mon/v1
        endpoints:
          - name: pool
            base_url: http://127.0.0.1:9
            model: m
            classes: [solo]
            deployment: {max_model_len: 1024}
          - name: shared
            base_url: http://127.0.0.1:9
            model: m
            classes: [a, b]
            deployment: {max_model_len: 8192}
        request_classes:
          - name: solo
            max_context_tokens: 1024
            dedicated_pool: true
            probes: [chat, reasoning, tool_call, long_prompt]
            probe: {long_prompt_tokens: 900}
            slos: [{name: availability, sli: availability, objective: 99, source: probes}]
          - name: a
            max_context_tokens: 4096
            probes: [chat, image, long_prompt]
            probe: {long_prompt_tokens: 3900}
            slos: [{name: availability, sli: availability, objective: 99, source: probes}]
          - name: b
            max_context_tokens: 4096
            probes: [chat]
            slos: [{name: availability, sli: availability, objective: 99, source: probes}]
        """) + service_sections(folder))  # fmt: skip
    return path


def _interval(
    endpoint: str, start: float, end: float, requests: float, hit: float | None
) -> ScrapeIntervalRow:
    # per interval: 10 prompts ≤ 100 tokens, 25 ≤ 500, 30 in all; 15 outputs ≤ 10 tokens, 30 ≤ 100
    hists = {
        "prompt_tokens": {"edges": [100, 500, "+Inf"], "counts": [10, 25, 30]},
        "generation_tokens": {"edges": [10, 100, "+Inf"], "counts": [15, 30, 30]},
    }
    return ScrapeIntervalRow(endpoint=endpoint, start=start, end=end, reset=False, backend="vllm",
                             generation="v1", requests=requests, prefix_cache_hit_rate=hit, finished={},
                             histograms=hists, notes=[])  # fmt: skip


def _probe(cls: str, endpoint: str, kind: str, at: float, tokens: tuple[int, int] | None) -> ProbeResultRow:
    prompt, output = tokens if tokens else (None, None)
    return ProbeResultRow(endpoint=endpoint, request_class=cls, kind=kind, started_at=at, ok=True,
                          prompt_tokens=prompt, completion_tokens=output, extra={}, log=[])  # fmt: skip


def _rows() -> list[Any]:
    return [
        # pool (solo only): 4 × 15 s, 30 requests each; hit rates 0.2..0.8; one interval outside
        *(_interval("pool", 9000 + 15 * i, 9015 + 15 * i, 30, 0.2 * (i + 1)) for i in range(4)),
        _interval("pool", 5000, 5015, 9999, 0.9),
        # shared (a and b): 3 × 10 s with 10, 30, 10 requests
        *(_interval("shared", 9000 + 10 * i, 9010 + 10 * i, n, None) for i, n in enumerate((10, 30, 10))),
        _probe("solo", "pool", "chat", 9001, (50, 5)),
        _probe("solo", "pool", "chat", 9002, (60, 6)),
        _probe("solo", "pool", "reasoning", 9003, (70, 7)),
        _probe("solo", "pool", "tool_call", 9004, (80, 8)),
        _probe("solo", "pool", "long_prompt", 9005, (900, 9)),
        _probe("solo", "pool", "image", 5000, (1, 1)),  # outside the window
        _probe("a", "shared", "chat", 9001, (100, 10)),
        _probe("a", "shared", "chat", 9002, (200, 20)),
        _probe("a", "shared", "image", 9003, (300, 30)),
        _probe("a", "shared", "chat", 9004, None),  # failed before counting tokens
        _probe("a", "shared", "long_prompt", 9005, (3900, 5)),
    ]


@pytest.fixture(scope="module")
def cfg(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    path = _config(tmp_path_factory.mktemp("learn"))
    url = f"sqlite:///{path.parent}/m3mon.db"
    upgrade(url)
    db = Store(url)
    try:
        with db.session() as s:
            EndpointRepo(s).ensure("pool")
            EndpointRepo(s).ensure("shared")
            s.add_all(_rows())
    finally:
        db.close()
    yield path


def _profile(cfg: Path, cls: str, capsys: pytest.CaptureFixture[str]) -> dict[str, Any]:
    out = cfg.parent / f"{cls}.yaml"
    assert (
        main(["profile", "-c", str(cfg), "--class", cls, "--since", "1h", "--at", str(AT), "-o", str(out)])
        == 0
    )
    assert f"wrote {out}" in capsys.readouterr().out
    load_profile(out)  # valid
    data = yaml.safe_load(out.read_text())
    assert isinstance(data, dict)
    return data


def test_a_dedicated_pool_learns_from_its_histograms_and_its_rate(
    cfg: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = _profile(cfg, "solo", capsys)
    # 4 intervals summed: prompt counts 40 ≤ 100, 100 ≤ 500, 120 in all; +Inf spread to max-model-len
    # 1024. Knots: (0, 1)-(40/120, 100), (40/120, 100)-(100/120, 500), (100/120, 500)-(1, 1024)
    third, five_sixths = 40 / 120, 100 / 120
    assert p["prompt_tokens"]["quantiles"] == [[0.0, 1], [third, 100], [third, 100], [five_sixths, 500],
                                               [five_sixths, 500], [1.0, 1024]]  # fmt: skip
    # outputs: 60 ≤ 10, 120 ≤ 100, none above
    assert p["output_tokens"]["quantiles"] == [[0.0, 1], [0.5, 10], [0.5, 10], [1.0, 100]]
    # 120 requests over 60 s on a pool of one class; equal counts: dispersion 0, Poisson
    assert p["arrival"] == {"process": "poisson", "rate": 2.0, "burstiness": 1.0, "inter_arrivals": []}
    # kinds: chat 2, reasoning 1, tool_call 1 (long_prompt left out, the image run is outside)
    assert (p["reasoning_share"], p["tool_call_share"], p["image_share"]) == (0.25, 0.25, 0.0)
    assert p["prefix_reuse"] == 0.5  # mean of 0.2, 0.4, 0.6, 0.8
    assert p["source"] == (
        "learned over 1h: server token histograms; arrivals from 4 scrape intervals; kinds from probes"
    )


def test_a_shared_pool_learns_from_probe_runs_and_divides_the_rate(
    cfg: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    p = _profile(cfg, "a", capsys)
    prof = load_profile(cfg.parent / "a.yaml")
    # three runs with counts: prompts 100, 200, 300; outputs 10, 20, 30 (the pool's histograms,
    # which hold b's traffic too, are not used; the long-prompt run is sized to the ceiling, not
    # the class's typical request, and is left out)
    assert {t for _, t in p["prompt_tokens"]["quantiles"]} == {100, 200, 300}
    assert [prof.prompt_tokens.at(u) for u in (0.0, 0.5, 1.0)] == [100, 200, 300]
    assert [prof.output_tokens.at(u) for u in (0.0, 0.5, 1.0)] == [10, 20, 30]
    # 50 requests / 30 s / 2 classes = 0.8333/s; D = ((30-10)² + (10-30)²)/2 / (2 · 50/3) = 12 > 2:
    # bursty with gamma shape 1/12
    assert p["arrival"]["process"] == "bursty"
    assert p["arrival"]["rate"] == 0.8333 and p["arrival"]["burstiness"] == 0.0833
    assert (p["image_share"], p["reasoning_share"], p["tool_call_share"], p["prefix_reuse"]) == (
        0.25,
        0.0,
        0.0,
        0.0,
    )
    assert p["source"].startswith("learned over 1h: 3 probe runs' token counts")


def test_the_contract_ceiling_comes_from_the_pools_histograms(
    cfg: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["contract", "-c", str(cfg), "--class", "solo", "--at", str(AT)]) == 0
    out = capsys.readouterr().out
    # inverse CDF of the knots above: prompt P50 = 100 + (0.5 − 1/3)/(1/2) · 400 = 233.3 → 233,
    # P95 = 500 + 0.7 · 524 = 866.8 → 867, P99 = 500 + 0.94 · 524 = 992.6 → 993, max 1024; output
    # P50 10, P95 10 + 0.9 · 90 = 91, P99 10 + 0.98 · 90 = 98.2 → 98, max 100. Sums: 243, 958,
    # 1091, 1124. The contract looks back 7 days, so the interval at 5000 counts too: 5 identical
    # intervals, 150 samples, the same quantiles. Coverage: the last edge under the 1024 ceiling is
    # 500: 125 / 150 = 83.33 %, a lower bound
    assert (
        "1,024 tokens (pool max-model-len 1,024); covers at least 83.33% of observed requests; "
        "prompt+output P50 243, P95 958, P99 1,091, max 1,124 over 150 samples from pool's server histograms"
    ) in out
    assert "pressure: P99 of 1091 tokens is above 90% of the 1024-token ceiling" in out


def test_the_contract_ceiling_of_a_shared_pool_counts_every_probe_kind(
    cfg: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 24, finding 6: the long-prompt probe's runs are the class's longest requests; the
    context use left them out and advised "KV waste: max-model-len … 25×" for a class whose probes
    fill the ceiling."""
    assert main(["contract", "-c", str(cfg), "--class", "a", "--at", str(AT)]) == 0
    out = capsys.readouterr().out
    # prompt + output of the four runs with counts: 110, 220, 330 (chat, chat, image), 3905
    # (long_prompt); nearest rank of 4: P50 the 2nd, P95 and P99 the 4th; all fit under 4,096
    assert (
        "4,096 tokens (pool max-model-len 8,192); covers 100.00% of observed requests; prompt+output "
        "P50 220, P95 3,905, P99 3,905, max 3,905 over 4 samples from probe runs of every kind "
        "(chat, image, long_prompt; prompt + output tokens)"
    ) in out
    assert "KV waste" not in out  # 8,192 is not above 4 × 3,905
