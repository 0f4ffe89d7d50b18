"""One ``/metrics`` page in Prometheus text format 0.0.4, parsed and validated strictly.

A page is either wholly usable or a :class:`~monitor.errors.ScrapeError`: empty, cut off (no
trailing newline), unparsable, duplicated series, histograms with duplicated, unordered or
decreasing buckets, a missing ``+Inf`` bucket, ``_count`` not equal to the ``+Inf`` bucket, NaN
or negative counts. Two parsers produce the same :class:`Page`: ``reference`` wraps
``prometheus_client.parser.text_string_to_metric_families``; ``fast`` (the default) is a
line-oriented parser of the same grammar that ``bench/scrape.py`` measured at several times the
speed of the reference (the reference alone misses the 200 pages/s goal).

``partial=True`` is for excerpts of real pages (issue threads, docs): an invalid histogram or
counter series is dropped with a note instead of rejecting the page. Live scrapes never use it.
"""

from __future__ import annotations

import math
import operator
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Literal

from prometheus_client.parser import text_string_to_metric_families

from monitor.errors import ScrapeError

Labels = dict[str, str]
ParserName = Literal["fast", "reference"]
_TYPES = frozenset({"counter", "gauge", "histogram", "summary", "untyped", "unknown"})


@dataclass(frozen=True)
class Sample:
    name: str
    labels: Labels
    value: float


@dataclass
class Page:
    """The samples of one page plus the TYPE and HELP of each family."""

    samples: list[Sample]
    types: dict[str, str] = field(default_factory=dict)
    helps: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


# --- the fast parser ---------------------------------------------------------------------------

_LINE = re.compile(r"([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?[ \t]+(\S+)(?:[ \t]+(-?\d+))?[ \t]*")
_LABEL = re.compile(r'[ \t]*([a-zA-Z_][a-zA-Z0-9_]*)[ \t]*=[ \t]*"((?:[^"\\]|\\.)*)"[ \t]*(?:,|$)')
_ESCAPES = {"\\\\": "\\", '\\"': '"', "\\n": "\n"}
_ESCAPE = re.compile(r"\\[\\\"n]")


def _labels(text: str, line_no: int) -> Labels:
    out: Labels = {}
    pos, end = 0, len(text.rstrip(" \t,")) if text.strip(" \t") else 0
    while pos < end:
        m = _LABEL.match(text, pos)
        if m is None or m.end() == pos:
            raise ScrapeError("garbled", f"line {line_no}: bad label set {{{text[:80]}}}")
        name, value = m.group(1), m.group(2)
        if "\\" in value:
            if _ESCAPE.sub("", value).count("\\"):
                raise ScrapeError("garbled", f"line {line_no}: bad escape in label {name}")
            value = _ESCAPE.sub(lambda e: _ESCAPES[e.group(0)], value)
        if name in out:
            raise ScrapeError("garbled", f"line {line_no}: label {name} repeated")
        out[name] = value
        pos = m.end()
    return out


def _comment(line: str, page: Page, line_no: int) -> None:
    parts = line.split(None, 3)
    if len(parts) < 3 or parts[1] not in ("HELP", "TYPE"):
        return
    name = parts[2]
    if parts[1] == "HELP":
        page.helps[name] = parts[3] if len(parts) > 3 else ""
        return
    kind = parts[3].strip() if len(parts) > 3 else ""
    if kind not in _TYPES or name in page.types:
        raise ScrapeError("garbled", f"line {line_no}: bad or repeated TYPE for {name}")
    page.types[name] = kind


#: Label sets parsed before, by their raw text: a server repeats the same label sets every scrape.
#: The dicts are shared between samples and pages, so they must never be mutated.
_LABEL_SETS: dict[str, Labels] = {}


def parse_fast(text: str) -> Page:
    """Parse text format 0.0.4 line by line (label sets are parsed once per distinct string)."""
    page = Page(samples=[])
    cache = _LABEL_SETS
    if len(cache) > 50_000:
        cache.clear()
    append = page.samples.append
    fullmatch = _LINE.fullmatch
    for line_no, line in enumerate(text.split("\n"), 1):
        if not line or line.isspace():
            continue
        if line[0] == "#":
            _comment(line, page, line_no)
            continue
        m = fullmatch(line)
        if m is None:
            raise ScrapeError("garbled", f"line {line_no}: not a sample: {line[:80]!r}")
        name, raw, value, _ = m.groups()
        if raw is None:
            labels: Labels = {}
        else:
            cached = cache.get(raw)
            labels = cached if cached is not None else cache.setdefault(raw, _labels(raw, line_no))
        try:
            append(Sample(name, labels, float(value)))
        except ValueError:
            raise ScrapeError("garbled", f"line {line_no}: bad value {value[:40]!r}") from None
    return page


def parse_reference(text: str) -> Page:
    """Parse with prometheus_client's own text parser."""
    page = Page(samples=[])
    try:
        for fam in text_string_to_metric_families(text):
            if fam.type != "unknown" or fam.documentation:
                exposed = _exposed_family_name(fam.name, fam.type, text)
                if fam.type != "unknown":
                    if exposed in page.types:
                        raise ScrapeError("garbled", f"repeated TYPE for {exposed}")
                    page.types[exposed] = fam.type
                if fam.documentation:
                    page.helps[exposed] = fam.documentation
            page.samples.extend(Sample(s.name, dict(s.labels), float(s.value)) for s in fam.samples)
    except ScrapeError:
        raise
    except Exception as exc:  # the parser raises ValueError, IndexError, KeyError ...
        raise ScrapeError("garbled", f"{type(exc).__name__}: {exc}"[:200]) from None
    return page


def _exposed_family_name(name: str, kind: str, text: str) -> str:
    """prometheus_client strips ``_total`` from counter family names; the page's TYPE line did not."""
    if kind == "counter" and f"# TYPE {name}_total counter" in text:
        return name + "_total"
    return name


# --- validation --------------------------------------------------------------------------------


def parse(text: str, *, parser: ParserName = "fast", partial: bool = False) -> Page:
    """Parse and validate a page; raise :class:`ScrapeError` unless it is wholly valid."""
    if not text.strip():
        raise ScrapeError("empty", "the page has no content")
    if not text.endswith("\n"):
        tail = text.rsplit("\n", 1)[-1]
        raise ScrapeError("truncated", f"page ends mid-line: {tail[-60:]!r}")
    page = parse_fast(text) if parser == "fast" else parse_reference(text)
    items = _sorted_labels(page)
    problem = next(_duplicates(page, items), None)
    if problem:
        raise ScrapeError("garbled", problem)
    bad = dict(_invalid_series(page, items))
    if bad and not partial:
        raise ScrapeError("garbled", next(iter(bad.values())))
    if bad:
        page.samples = [s for s in page.samples if _series_key(s, page) not in bad]
        page.notes.extend(sorted(set(bad.values())))
    return page


def _sorted_labels(page: Page) -> dict[int, tuple[tuple[str, str], ...]]:
    """Each distinct label dict of the page (by identity; the fast parser shares equal ones), sorted."""
    memo: dict[int, tuple[tuple[str, str], ...]] = {}
    for s in page.samples:
        if id(s.labels) not in memo:
            memo[id(s.labels)] = tuple(sorted(s.labels.items()))
    return memo


def _duplicates(page: Page, items: dict[int, tuple[tuple[str, str], ...]]) -> Iterator[str]:
    seen: set[tuple[str, tuple[tuple[str, str], ...]]] = set()
    for s in page.samples:
        key = (s.name, items[id(s.labels)])
        if key in seen:
            yield f"series {s.name}{s.labels} appears twice"
        seen.add(key)


def _family(name: str, page: Page) -> tuple[str, str] | None:
    """(family, part) for a sample of a histogram or counter family, else None."""
    types = page.types
    if types.get(name) == "counter":
        return name, "value"
    for part in ("_bucket", "_count", "_sum"):
        if name.endswith(part):
            fam = name[: -len(part)]
            if types.get(fam) == "histogram":
                return fam, part[1:]
    return None


def _series_key(s: Sample, page: Page) -> tuple[str, tuple[tuple[str, str], ...]] | None:
    fam = _family(s.name, page)
    if fam is None:
        return None
    return fam[0], tuple(sorted((k, v) for k, v in s.labels.items() if k != "le"))


def _invalid_series(
    page: Page, items: dict[int, tuple[tuple[str, str], ...]]
) -> Iterator[tuple[tuple[str, tuple[tuple[str, str], ...]], str]]:
    """Yield (series key, problem) for each counter or histogram series that is not valid."""
    without_le: dict[int, tuple[tuple[str, str], ...]] = {}
    hists: dict[tuple[str, tuple[tuple[str, str], ...]], dict[str, list[tuple[str, float]]]] = {}
    families: dict[str, tuple[str, str] | None] = {}
    unseen = ("", "")
    for s in page.samples:
        fam = families.get(s.name, unseen)
        if fam is unseen:
            fam = families[s.name] = _family(s.name, page)
        if fam is None:
            continue
        labels = s.labels
        if fam[1] == "value":
            if math.isnan(s.value) or s.value < 0:
                bad = tuple(kv for kv in items[id(labels)] if kv[0] != "le")
                yield (fam[0], bad), f"counter {s.name}{labels} has value {s.value}"
            continue
        series = without_le.get(id(labels))
        if series is None:
            series = without_le[id(labels)] = tuple(kv for kv in items[id(labels)] if kv[0] != "le")
        parts = hists.get((fam[0], series))
        if parts is None:
            parts = hists[(fam[0], series)] = {}
        parts.setdefault(fam[1], []).append((labels.get("le", ""), s.value))
    for key, parts in hists.items():
        problem = histogram_problem(parts)
        if problem:
            yield key, f"histogram {key[0]}{dict(key[1])}: {problem}"


def histogram_problem(parts: dict[str, list[tuple[str, float]]]) -> str | None:
    """Why a histogram series (``le`` strings and values per part) is invalid, or None."""
    buckets = parts.get("bucket", [])
    counts = parts.get("count", [])
    if not buckets and not counts:
        return None  # only _sum: nothing to check
    if not buckets:
        return "no buckets"
    try:
        edges = [float(le) for le, _ in buckets]
    except ValueError:
        return "bucket without a numeric le"
    values = [v for _, v in buckets]
    if any(map(math.isnan, edges)) or any(map(math.isnan, values)) or min(values) < 0:
        return "NaN or negative bucket"
    if all(map(operator.lt, edges, edges[1:])):  # the usual case: exposed in increasing order
        ordered, top = values, edges[-1]
    else:
        if len(set(edges)) != len(edges):
            return "duplicated bucket"
        order = sorted(range(len(edges)), key=edges.__getitem__)
        ordered, top = [values[i] for i in order], edges[order[-1]]
    if any(map(operator.gt, ordered, ordered[1:])):
        return "bucket counts decrease"
    if not math.isinf(top):
        return "no +Inf bucket"
    if len(counts) != 1 or math.isnan(counts[0][1]) or counts[0][1] != ordered[-1]:
        return "_count missing or not equal to the +Inf bucket"
    sums = parts.get("sum", [])
    if len(sums) != 1 or not math.isfinite(sums[0][1]):
        return "_sum missing or not finite"
    return None
