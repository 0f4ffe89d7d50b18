"""OriginPools: each origin's requests go through its own pool, kept alive there, closed with the client.

Against two real HTTP/1.1 servers on loopback: the oracle is what the servers saw (which port
answered, over how many TCP connections) and the pools' own connection lists.
"""

from __future__ import annotations

import asyncio
from http.server import BaseHTTPRequestHandler

import httpcore
import httpx

from monitor.origins import OriginPools
from monitor.probes.wire import probe_client
from tests.support.http import serving

PEERS: set[tuple[int, tuple[str, int]]] = set()  # (server port, client address): one per connection


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as vLLM serves

    def do_GET(self) -> None:
        port = self.server.server_address[1]
        PEERS.add((port, self.client_address))
        body = str(port).encode()
        self.send_response(200 if self.path == "/ok" else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


def _connections(pool: httpx.AsyncBaseTransport) -> list[httpcore.AsyncConnectionInterface]:
    assert isinstance(pool, httpx.AsyncHTTPTransport)
    return list(pool._pool.connections)


def test_each_origin_has_its_own_pool_and_reuses_its_connection() -> None:
    PEERS.clear()
    with serving(_Handler) as a, serving(_Handler) as b:
        port_a, port_b = (int(u.rsplit(":", 1)[1]) for u in (a, b))
        pools = OriginPools(lambda: httpx.AsyncHTTPTransport(limits=httpx.Limits(max_connections=None)))

        async def main() -> tuple[list[tuple[int, str]], dict[int, int]]:
            async with httpx.AsyncClient(transport=pools) as client:
                seen = []
                for url in (a, b, a, b, a):
                    r = await client.get(url + "/ok")
                    seen.append((r.status_code, r.text))
                missing = await client.get(b + "/missing")
                seen.append((missing.status_code, missing.text))
                held = {o[2] or 0: len(_connections(p)) for o, p in pools.pools.items()}
            return seen, held

        seen, held = asyncio.run(main())
    assert seen == [(200, str(p)) for p in (port_a, port_b, port_a, port_b, port_a)] + [(404, str(port_b))]
    assert held == {port_a: 1, port_b: 1}  # one idle keep-alive connection in each origin's own pool
    assert sorted(port for port, _ in PEERS) == sorted([port_a, port_b])  # six requests, two connections
    assert pools.pools == {}  # closing the client closed and forgot every pool


def test_the_probe_client_pools_per_origin_and_still_answers() -> None:
    with serving(_Handler) as a:

        async def main() -> tuple[int, int]:
            async with probe_client() as client:
                r = await client.get(a + "/ok")
                transport = client._transport
                assert isinstance(transport, OriginPools)
                return r.status_code, len(transport.pools)

        assert asyncio.run(main()) == (200, 1)
