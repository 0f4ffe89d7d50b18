"""One connection pool per origin: :class:`OriginPools`, an httpx transport for many endpoints.

httpcore's connection pool looks at every connection it holds for every request it assigns (and,
to close surplus idle ones, counts the idle connections once per connection: quadratic in the
pool's size). One pool shared by the 200 endpoints of a fleet replica holds hundreds of
connections, so assigning a request cost more CPU than the request itself. This transport keeps
one pool per origin (scheme, host, port), made by ``factory`` on the first request to it; each
pool sees only its origin's connections, with the same limits per origin as the shared pool had
in total. Requests, responses and errors pass through unchanged.
"""

from __future__ import annotations

from collections.abc import Callable

import httpx

Origin = tuple[bytes, bytes, int | None]


class OriginPools(httpx.AsyncBaseTransport):
    """An ``httpx`` transport routing each request to its origin's own transport."""

    def __init__(self, factory: Callable[[], httpx.AsyncBaseTransport]) -> None:
        self.factory = factory
        self.pools: dict[Origin, httpx.AsyncBaseTransport] = {}

    def pool(self, url: httpx.URL) -> httpx.AsyncBaseTransport:
        origin = (url.raw_scheme, url.raw_host, url.port)
        pool = self.pools.get(origin)
        if pool is None:
            pool = self.pools[origin] = self.factory()
        return pool

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        return await self.pool(request.url).handle_async_request(request)

    async def aclose(self) -> None:
        pools, self.pools = list(self.pools.values()), {}
        for pool in pools:
            await pool.aclose()
