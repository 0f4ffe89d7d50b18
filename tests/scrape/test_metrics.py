"""The scrape-health metrics the exporter publishes."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest

from monitor.scrape.fingerprint import build
from monitor.scrape.metrics import ScrapeMetrics
from tests.scrape.conftest import reading_of


def test_scrape_metrics_exposition() -> None:
    reg = CollectorRegistry()
    m = ScrapeMetrics(reg)
    m.start("ep")
    m.observe("ep", 0.2)
    m.observe("ep", 1.5, "timeout")
    m.set_fingerprint("ep", build(reading_of("vllm-0.13.0.metrics.txt")))
    text = generate_latest(reg).decode()
    assert 'm3mon_scrape_success{endpoint="ep"} 0.0' in text
    assert 'm3mon_scrape_errors_total{endpoint="ep",reason="timeout"} 1.0' in text
    assert 'm3mon_scrape_errors_total{endpoint="ep",reason="garbled"} 0.0' in text
    assert 'm3mon_scrape_duration_seconds_count{endpoint="ep"} 2.0' in text
    assert "m3mon_deployment_info{" in text and 'block_size="128"' in text and 'cache_dtype="auto"' in text
    assert "vllm:" not in text  # raw series are never re-exported


def test_block_size_warning() -> None:
    fp = build(reading_of("vllm-0.33-3models-2engines.metrics.txt"))
    assert fp.block_size == 128 and fp.warnings == ()
    from dataclasses import replace

    bad = replace(fp, block_size=16)
    assert bad.block_size_ok is False and "128" in bad.warnings[0]
