"""``/runbooks/``: every alert's runbook, so each alert's ``runbook_url`` opens on the monitor itself.

The pages are rendered by the generator that writes ``alerts/runbooks/`` (the same text, with the
configuration file named in the banner), once, on the first request. ``/runbooks/<AlertName>.md``
answers ``text/markdown``; ``/runbooks/`` lists them.
"""

from __future__ import annotations

from functools import cached_property

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from monitor import conventions as cv
from monitor.generate.runbooks import every_runbook

MARKDOWN = "text/markdown; charset=utf-8"
PREFIX = "/runbooks"


class RunbookPages:
    """The runbook routes' handlers for a configuration read from ``source``."""

    def __init__(self, source: str) -> None:
        self.source = source

    @cached_property
    def pages(self) -> dict[str, str]:
        return every_runbook(cv.DO_NOT_EDIT.format(source=self.source))

    async def page(self, request: Request) -> Response:
        name = str(request.path_params["name"])
        text = self.pages.get(name.removesuffix(".md")) if name.endswith(".md") else None
        if text is None:
            return PlainTextResponse(f"no runbook {name!r}; the list is at {PREFIX}/\n", status_code=404)
        return Response(text, media_type=MARKDOWN)

    async def index(self, _: Request) -> Response:
        lines = [f"- [{name}]({PREFIX}/{name}.md)" for name in sorted(self.pages)]
        return Response("# Runbooks\n\n" + "\n".join(lines) + "\n", media_type=MARKDOWN)
