"""Collector throughput: parse + validate + read + reduce of modern vLLM pages, in pages/s on one core.

Prints, for the largest vLLM fixture and the 3 models x 2 engines page: the plain
``prometheus_client.parser.text_string_to_metric_families`` (parse only, the baseline), the
collector with that reference parser, and the collector with its fast parser, each with its
ratio to the baseline measured in the same run. Goal: >= 200 pages/s for the collector.

    .venv/bin/python bench/scrape.py [--seconds 2]
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from pathlib import Path

from prometheus_client.parser import text_string_to_metric_families

from monitor.scrape.collector import read_text
from monitor.scrape.interval import signals

FIXTURES = Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "metrics"
PAGES = ("vllm-0.13.0.metrics.txt", "vllm-0.33-3models-2engines.metrics.txt")


def rate(fn: Callable[[], object], seconds: float) -> float:
    """Calls per second of ``fn`` over about ``seconds`` (best of three rounds)."""
    best = 0.0
    for _ in range(3):
        n, start = 0, time.perf_counter()
        while (elapsed := time.perf_counter() - start) < seconds / 3:
            fn()
            n += 1
        best = max(best, n / elapsed)
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seconds", type=float, default=2.0)
    args = ap.parse_args()
    for name in PAGES:
        text = (FIXTURES / name).read_text()
        older = read_text(text, 0.0)

        def plain(text: str = text) -> object:
            return list(text_string_to_metric_families(text))

        def collector(parser: str, text: str = text, older: object = older) -> Callable[[], object]:
            return lambda: signals("bench", read_text(text, 15.0, parser=parser), older)  # type: ignore[arg-type]

        base = rate(plain, args.seconds)
        ref = rate(collector("reference"), args.seconds)
        fast = rate(collector("fast"), args.seconds)
        print(f"{name} ({len(text) // 1024} KiB, {text.count(chr(10))} lines)")
        print(f"  plain prometheus_client parser (parse only): {base:8.1f} pages/s  1.00x")
        print(f"  collector, reference parser (parse+reduce):  {ref:8.1f} pages/s  {ref / base:.2f}x")
        print(f"  collector, fast parser (parse+reduce):       {fast:8.1f} pages/s  {fast / base:.2f}x"
              f"  goal 200 pages/s: {'met' if fast >= 200 else 'MISSED'}")  # fmt: skip


if __name__ == "__main__":
    main()
