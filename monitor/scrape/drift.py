"""Metric drift: what the monitor's consumers need from a page against what the page serves.

vLLM's metric names move (renames, flag-gated families, hidden then removed names, label values
added), and a consumer that reads a name the server does not serve fails silently: a dashboard
panel goes empty, an SLO's rules read nothing. A :class:`Need` is one exposed family that a rule,
an SLO or a dashboard reads (:mod:`monitor.generate.needs` lists them from the generated files);
:func:`assess` compares the needs with a page's :class:`Surface` and says, for each, whether it is
served and, if not, why and what to do, from vLLM's history (:mod:`monitor.scrape.drift_history`):

* ``served``: the page has it;
* ``flag``: vLLM registers it only with a flag (``--kv-cache-metrics``, ``--speculative-config``);
* ``renamed``: the page serves the *older* name of the same quantity: this vLLM predates the name
  the consumer reads (the monitor's own collector reads either, so the store still has it);
* ``removed``: the page serves the name that *replaced* it (hidden first: re-enable with
  ``--show-hidden-metrics-for-version``, then removed);
* ``absent``: not served, for no known reason (a family newer than the server, a disabled stats
  logger: ``--disable-log-stats`` turns every engine family off);
* ``label``: served, but without a label value the consumer counts (``finished_reason="error"``
  appeared in 0.13: before it, a request that failed in the engine is no bad event).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from monitor.scrape.drift_history import BY_NAME, LABEL_VALUES, PREDECESSOR, Family
from monitor.scrape.page import Page

SERVED, FLAG, RENAMED, REMOVED, ABSENT, LABEL = "served", "flag", "renamed", "removed", "absent", "label"
STATUSES = (SERVED, FLAG, RENAMED, REMOVED, ABSENT, LABEL)
_SUFFIXES = ("_bucket", "_sum", "_count", "_created")


@dataclass(frozen=True)
class Need:
    """One exposed family some consumers read (``users``: "SLO chat/ttft-p95", "dashboard …")."""

    family: str
    users: tuple[str, ...]


@dataclass(frozen=True)
class Surface:
    """What one page serves: its families, and the values of the labels drift checks."""

    families: frozenset[str]
    labels: dict[tuple[str, str], frozenset[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Drift:
    """One need of one endpoint, judged against its page."""

    endpoint: str
    family: str
    users: tuple[str, ...]
    status: str
    detail: str
    replacement: str | None = None

    @property
    def served(self) -> bool:
        return self.status == SERVED

    def line(self) -> str:
        who = ", ".join(self.users[:3]) + (f" and {len(self.users) - 3} more" if len(self.users) > 3 else "")
        return f"{self.endpoint}: {self.family} ({self.status}; needed by {who}): {self.detail}"


def surface(page: Page) -> Surface:
    """The families ``page`` serves (TYPE lines and samples) and the label values drift checks.
    On the scrape path: one pass over the samples' names, the rest over the distinct names."""
    sampled = {s.name for s in page.samples}
    names = set(page.types) | sampled
    names |= {n[: -len(x)] for n in sampled for x in _SUFFIXES if n.endswith(x)}
    checked = {f: label for f, label, *_ in LABEL_VALUES if f in sampled}
    labels: dict[tuple[str, str], set[str]] = {}
    if checked:
        for s in page.samples:
            label = checked.get(s.name)
            if label is not None and label in s.labels:
                labels.setdefault((s.name, label), set()).add(s.labels[label])
    return Surface(frozenset(names), {k: frozenset(v) for k, v in labels.items()})


def assess(endpoint: str, needs: Iterable[Need], page: Surface) -> tuple[Drift, ...]:
    """Each need of ``endpoint`` judged against ``page`` (module docstring), in the needs' order."""
    needs = list(needs)
    readers = {n.family: set(n.users) for n in needs}
    return tuple(_judge(endpoint, need, page, readers) for need in needs)


def _judge(endpoint: str, need: Need, page: Surface, readers: dict[str, set[str]]) -> Drift:
    f, served = need.family, page.families
    history = BY_NAME.get(f)
    other = PREDECESSOR.get(f) or (history.successor if history is not None else None)
    if f not in served and other in served and set(need.users) <= readers.get(other or "", set()):
        # every reader falls back to the other name of the same quantity (``new or old``)
        return Drift(
            endpoint, f, need.users, SERVED, f"served as {other}, which its readers also read", other
        )

    def drift(status: str, detail: str, replacement: str | None = None) -> Drift:
        return Drift(endpoint, f, need.users, status, detail, replacement)

    if f in served:
        missing = _missing_label(f, page)
        return drift(LABEL, missing) if missing else drift(SERVED, "served")
    older = PREDECESSOR.get(f)
    if older is not None and older in served:
        since = f" (vLLM {history.since}+)" if history is not None and history.since else ""
        return drift(RENAMED, f"this vLLM serves the older name {older}; {f}{since} is not served yet: "
                     "upgrade vLLM, or read the older name", older)  # fmt: skip
    if history is not None and history.successor is not None and history.successor in served:
        return drift(REMOVED, _removed(history), history.successor)
    if history is not None and history.flag is not None:
        return drift(FLAG, f"registered only when vLLM runs with {history.flag}")
    if not any(n.startswith(f.split(":", 1)[0] + ":") for n in served):
        return drift(
            ABSENT, "the page has no engine families at all (vLLM started with --disable-log-stats?)"
        )
    since = f"; it appeared in vLLM {history.since}" if history is not None and history.since else ""
    return drift(ABSENT, f"not served{since}")


def _removed(h: Family) -> str:
    text = f"replaced by {h.successor}, which this vLLM serves"
    if h.hidden:
        show = f"--show-hidden-metrics-for-version={h.show_hidden}"
        text += f"; hidden from vLLM {h.hidden} ({show} shows it again)"
    if h.removed:
        text += f", removed in {h.removed}"
    return text + ": read the new name"


def _missing_label(family: str, page: Surface) -> str | None:
    for f, label, value, since, meaning in LABEL_VALUES:
        values = page.labels.get((f, label))
        if f == family and values and value not in values:
            return f'{label}="{value}" is not served (vLLM {since}+): {meaning}'
    return None


def unserved(drifts: Sequence[Drift]) -> list[Drift]:
    """The drifts that need attention (everything but ``served``)."""
    return [d for d in drifts if not d.served]
