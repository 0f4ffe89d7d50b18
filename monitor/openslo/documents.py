"""Reading OpenSLO files: YAML streams or lists of documents, each remembered with where it came from.

A :class:`Document` keeps its file and position so every refusal names them: ``slos.yaml#2 (SLO
web-availability): spec.budgetingMethod: …``. :class:`Problems` collects refusals so one run
reports all of them.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from monitor.errors import ConfigError

API_V1 = "openslo/v1"
API_V1ALPHA = "openslo/v1alpha"
KINDS = ("Service", "SLO", "SLI", "DataSource", "AlertPolicy", "AlertCondition", "AlertNotificationTarget")
#: v1alpha defines only these two kinds.
V1ALPHA_KINDS = ("Service", "SLO")

#: Annotation prefix of the m3mon settings OpenSLO has no field for.
PREFIX = "m3mon.dev/"
A_NAME = PREFIX + "name"
A_SLI = PREFIX + "sli"
A_MIN_EVENTS = PREFIX + "min-events"
A_MAX_CONTEXT = PREFIX + "max-context-tokens"
A_PROBES = PREFIX + "probes"
A_PROBE = PREFIX + "probe."
A_DEDICATED = PREFIX + "dedicated-pool"
A_SHORT_WINDOW = PREFIX + "short-window"
A_EXHAUSTION = PREFIX + "exhaustion-within"
A_PAGE_WITHIN = PREFIX + "page-within"
A_FREEZE_BELOW = PREFIX + "budget-policy.freeze-below"
A_FREEZE_PAGE = PREFIX + "budget-policy.freeze-on-page-burn"


@dataclass(frozen=True)
class Document:
    """One OpenSLO object and where it was read."""

    source: str
    index: int  # 1-based position in its file
    body: dict[str, Any]

    @property
    def api_version(self) -> str:
        return str(self.body.get("apiVersion", ""))

    @property
    def kind(self) -> str:
        return str(self.body.get("kind", ""))

    @property
    def metadata(self) -> dict[str, Any]:
        meta = self.body.get("metadata")
        return meta if isinstance(meta, dict) else {}

    @property
    def name(self) -> str:
        return str(self.metadata.get("name", ""))

    @property
    def spec(self) -> dict[str, Any]:
        spec = self.body.get("spec")
        return spec if isinstance(spec, dict) else {}

    def annotation(self, key: str) -> str | None:
        notes = self.metadata.get("annotations")
        value = notes.get(key) if isinstance(notes, dict) else None
        return None if value is None else str(value)

    @property
    def m3mon_name(self) -> str:
        """The exact m3mon name (annotation), else the OpenSLO name."""
        return self.annotation(A_NAME) or self.name

    def where(self) -> str:
        return f"{self.source}#{self.index} ({self.kind or '?'} {self.name or '?'})"


@dataclass
class Problems:
    """Refusals collected while reading; :meth:`raise_any` turns them into one ConfigError."""

    lines: list[str] = field(default_factory=list)

    def add(self, doc: Document, path: str, message: str) -> None:
        self.lines.append(f"{doc.where()}: {path}: {message}")

    def raise_any(self) -> None:
        if self.lines:
            raise ConfigError(["OpenSLO documents that do not map onto m3mon/v1:", *self.lines])


def _items(data: Any) -> Iterable[Any]:
    if isinstance(data, list):
        yield from data
    elif data is not None:
        yield data


def load_documents(paths: Iterable[str | Path]) -> list[Document]:
    """Every document of every file (YAML streams, lists of objects, or both)."""
    docs: list[Document] = []
    for path in paths:
        p = Path(path)
        try:
            text = p.read_text(encoding="utf-8")
            loaded = list(yaml.safe_load_all(text))
        except OSError as exc:
            raise ConfigError([f"{p}: cannot read: {exc.strerror or exc}"]) from None
        except yaml.YAMLError as exc:
            raise ConfigError([f"{p}: not valid YAML: {getattr(exc, 'problem', exc)}"]) from None
        for index, item in enumerate((i for d in loaded for i in _items(d)), start=1):
            if not isinstance(item, dict):
                raise ConfigError([f"{p}#{index}: expected an OpenSLO object (a mapping), got {item!r}"])
            docs.append(Document(str(p), index, item))
    return docs


def check_kinds(docs: Iterable[Document], problems: Problems) -> list[Document]:
    """The documents of a known version and kind; the others are refused by field."""
    good: list[Document] = []
    seen: dict[tuple[str, str], Document] = {}
    for doc in docs:
        first = seen.setdefault((doc.kind, doc.name), doc)
        if first is not doc:
            problems.add(
                doc, "metadata.name", f"a second {doc.kind} named {doc.name!r} (first: {first.where()})"
            )
        elif doc.api_version not in (API_V1, API_V1ALPHA):
            problems.add(doc, "apiVersion", f"expected {API_V1} or {API_V1ALPHA}, got {doc.api_version!r}")
        elif doc.kind not in (KINDS if doc.api_version == API_V1 else V1ALPHA_KINDS):
            problems.add(doc, "kind", f"{doc.api_version} has no kind {doc.kind!r}")
        elif not doc.name:
            problems.add(doc, "metadata.name", "required")
        else:
            good.append(doc)
    return good
