"""The constructed week, built and rendered once per test session (rendering a PDF takes a second)."""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from monitor.report import generate, periods
from monitor.store import Store
from tests.report import week as W


@dataclass(frozen=True)
class Built:
    week: W.Week
    rendered: generate.Rendered
    out: Path


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Built]:
    tmp = tmp_path_factory.mktemp("report")
    old = os.environ.get("M3MON_REPORT_TEST_KEY")
    os.environ["M3MON_REPORT_TEST_KEY"] = W.API_KEY
    try:
        wk = W.build(tmp)
        store = Store(wk.url)
        try:
            data = generate.build(wk.model, store, periods.iso_week(W.WEEK, periods.zone("UTC")), W.NOW)
        finally:
            store.close()
        rendered = generate.render(data)
        out = tmp / "out"
        generate.write(rendered, out)
        yield Built(wk, rendered, out)
    finally:
        if old is None:
            os.environ.pop("M3MON_REPORT_TEST_KEY", None)
        else:
            os.environ["M3MON_REPORT_TEST_KEY"] = old
