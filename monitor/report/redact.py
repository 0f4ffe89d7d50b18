"""Keeping secrets out of a report that gets forwarded.

Free text that reaches the report (alert summaries and labels, probe failure details) passes
through :class:`Redactor`: the configured endpoints' API keys (read from their environment
variables), bearer tokens and ``sk-``-style keys are replaced by ``[redacted]``, and labels whose
name says they hold a secret are dropped. Text is also cut to a readable length.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping

from monitor.model import Model

REDACTED = "[redacted]"
_PATTERNS = (
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._~+/=-]{6,}"),
    re.compile(r"\bsk-[A-Za-z0-9_-]{8,}"),
    re.compile(r"(?i)\b(api[_-]?key|token|password|secret)=\S+"),
)
_SECRET_LABEL = re.compile(r"(?i)(key|token|secret|password|authorization|cookie)")


class Redactor:
    """Replaces known and look-alike secrets in text; built once per report."""

    def __init__(self, secrets: Iterable[str] = (), max_length: int = 300) -> None:
        self.secrets = sorted({s for s in secrets if len(s) >= 4}, key=len, reverse=True)
        self.max_length = max_length

    @classmethod
    def for_model(cls, model: Model) -> Redactor:
        """A redactor that knows every endpoint's API key from the environment."""
        keys = (e.api_key() for e in model.endpoints)
        return cls(k for k in keys if k)

    def text(self, value: str | None) -> str:
        out = value or ""
        for secret in self.secrets:
            out = out.replace(secret, REDACTED)
        for pattern in _PATTERNS:
            out = pattern.sub(REDACTED, out)
        out = " ".join(out.split())
        return out if len(out) <= self.max_length else out[: self.max_length - 1] + "…"

    def labels(self, labels: Mapping[str, object]) -> tuple[tuple[str, str], ...]:
        """Sorted (name, value) pairs without secret-named labels, values redacted."""
        return tuple(
            (self.text(str(k)), self.text(str(v)))
            for k, v in sorted(labels.items())
            if not _SECRET_LABEL.search(str(k))
        )
