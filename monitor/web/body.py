"""One way to read a body: through a capped stream, never buffering past the cap.

:func:`read_capped` is used by every receiver of ``m3mon run`` (``/alertmanager``, ``/v1/traces``)
and by the collector's fetch. A declared ``Content-Length`` above the cap is refused before a
single byte is read; otherwise chunks are counted as they arrive and reading stops at the first
one that would pass the cap, so a body without a length (chunked, or a compressed page whose
decoded size is unknown) is never held beyond ``limit`` bytes.
"""

from __future__ import annotations

from collections.abc import AsyncIterable


class BodyTooLarge(Exception):
    """The body is (or declares to be) larger than ``limit`` bytes."""

    def __init__(self, limit: int, declared: int | None = None) -> None:
        self.limit = limit
        self.declared = declared
        what = f"Content-Length {declared}" if declared is not None else "body"
        super().__init__(f"{what} exceeds the cap of {limit} bytes")


def declared_length(value: str | None) -> int | None:
    """The ``Content-Length`` header as a number; None when absent or not a plain number."""
    if value is None or not value.strip().isdigit():
        return None
    return int(value.strip())


async def read_capped(chunks: AsyncIterable[bytes], limit: int, content_length: str | None = None) -> bytes:
    """The whole body from ``chunks``; :class:`BodyTooLarge` as soon as it passes ``limit`` bytes.

    ``content_length`` is the declared length, checked first (pass None where it does not bound
    what ``chunks`` yields, e.g. for a compressed response read decoded).
    """
    declared = declared_length(content_length)
    if declared is not None and declared > limit:
        raise BodyTooLarge(limit, declared)
    body = bytearray()
    async for chunk in chunks:
        if len(body) + len(chunk) > limit:
            raise BodyTooLarge(limit)
        body += chunk
    return bytes(body)
