"""Benchmark: what a scrape costs the store, now that the store derives intervals from readings.

One SQLite store, the example configuration's ``m3-interactive`` endpoint (three classes, their
server SLOs), a real vLLM 0.13 page whose counters grow between scrapes. Timed per scrape, each
through ``Store.apply`` in its own transaction as the service's writer does:

* baseline: an interval computed by the writer (``signals_op``: what a replica wrote before
  issue 22, and what the history generator still writes);
* reading: the scrape's reading (``reading_op``): the store reads the previous reading, derives
  the interval and its slices;
* pair: both replicas of an HA pair write every slot (the second reading is a duplicate);
* late: every other reading arrives after the next one and splits the interval it falls in.

Prints ms per scrape and the ratio to the baseline, measured in the same run
(``M3MON_BENCH_SCRAPES`` sets the number of scrapes, default 400).
"""

from __future__ import annotations

import itertools
import os
import re
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from monitor.model import Model, load_model
from monitor.scrape import Reading, read_text, signals
from monitor.store import Store
from monitor.store.migrate import upgrade
from monitor.store.ops import Op, signals_op
from monitor.store.readings import reading_op

ROOT = Path(__file__).resolve().parents[1]
PAGE = (ROOT / "tests" / "fixtures" / "metrics" / "vllm-0.13.0.metrics.txt").read_text()
SCRAPES = int(os.environ.get("M3MON_BENCH_SCRAPES", "400"))
T0 = 1_767_225_600.0
ENDPOINT = "m3-interactive"
_NUMBER = re.compile(r"^(vllm:[a-z_]+(?:_total|_count|_bucket|_sum)\{[^}]*\}) ([0-9.e+]+)$", re.M)


def page(k: int) -> str:
    """The fixture page with every counter grown by ``k`` × a few events."""
    return _NUMBER.sub(lambda m: f"{m.group(1)} {float(m.group(2)) + 3 * k!r}", PAGE)


def readings() -> list[Reading]:
    return [read_text(page(k), at=T0 + 15.0 * k) for k in range(SCRAPES)]


def _store(tmp: Path, name: str) -> Store:
    url = f"sqlite:///{tmp / (name + '.db')}"
    upgrade(url)
    return Store(url)


def timed(tmp: Path, name: str, model: Model, ops: Iterator[Op]) -> float:
    """ms per scrape slot building and applying ``ops`` (lazily: the writer's share counts too),
    one transaction each."""
    store = _store(tmp, name)
    start = time.perf_counter()
    for op in ops:
        store.apply([op], model)
    store.close()
    return (time.perf_counter() - start) * 1000 / SCRAPES


def main() -> None:
    model = load_model(ROOT / "examples" / "monitor.yaml")
    rs = readings()
    runs: dict[str, Callable[[], Iterator[Op]]] = {
        "baseline (interval op)": lambda: (
            signals_op(model, ENDPOINT, signals(ENDPOINT, b, a), k)
            for k, (a, b) in enumerate(itertools.pairwise(rs))
        ),
        "reading": lambda: (reading_op(ENDPOINT, r, k, "a") for k, r in enumerate(rs)),
        "pair (two readings a slot)": lambda: (
            reading_op(ENDPOINT, r, k, rep) for k, r in enumerate(rs) for rep in ("a", "b")
        ),
        "late (every other one splits)": lambda: (
            reading_op(ENDPOINT, rs[k], k, "a") for i in range(0, SCRAPES - 1, 2) for k in (i + 1, i)
        ),
    }
    with tempfile.TemporaryDirectory(prefix="m3mon-bench-writes-") as tmp:
        base = None
        for i, (name, build) in enumerate(runs.items()):
            ms = timed(Path(tmp), f"s{i}", model, build())
            base = base or ms
            print(f"{name:32} {ms:7.2f} ms/scrape  {ms / base:5.2f}x baseline")


if __name__ == "__main__":
    main()
