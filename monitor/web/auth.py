"""HTTP basic authentication against bcrypt hashes, as the Prometheus exporter-toolkit does it.

Every request of every path must carry ``Authorization: Basic …`` for one of the web config's
``basic_auth_users``; otherwise the answer is ``401`` with ``WWW-Authenticate: Basic`` and the
request goes no further (its body is never read). As in the toolkit:

* bcrypt runs for unknown users too (against a fixed dummy hash), so timing does not reveal
  which user names exist;
* verdicts are cached by a SHA-256 of (user, hash, password), so a scraper presenting the same
  credentials every 15 s pays for bcrypt once. The cache is bounded (least recently used out).

bcrypt runs in a worker thread, at most :data:`MAX_CONCURRENT_CHECKS` at a time, so a flood of
wrong passwords slows only itself, not the event loop. Passwords over 72 bytes (bcrypt's limit)
are refused without hashing.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import hashlib
from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any

import bcrypt
from starlette.datastructures import Headers
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

MAX_CONCURRENT_CHECKS = 2
CACHE_SIZE = 256
#: bcrypt reads at most 72 bytes of a password; longer ones are refused, never truncated.
MAX_PASSWORD_BYTES = 72
#: Hashed for unknown users, so they cost the same time as known ones (password: "m3mon-dummy").
_DUMMY_HASH = b"$2b$10$bvpQNqFdSJ.s6NaJYIBS1.GvlMBREBJwSn5qAVFBT1VZLeo0JrKFC"


def parse_basic(header: str | None) -> tuple[str, str] | None:
    """(user, password) from an ``Authorization: Basic`` header; None when absent or malformed."""
    if not header or len(header) > 1024:
        return None
    scheme, _, token = header.partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(token.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    user, sep, password = decoded.partition(":")
    return (user, password) if sep else None


def _checkpw(password: bytes, hashed: bytes) -> bool:
    try:
        return bcrypt.checkpw(password, hashed)
    except ValueError:  # a malformed hash or an over-long password
        return False


class BasicAuth:
    """The users of a web config and the verdict cache; :meth:`replace` swaps users on reload."""

    def __init__(self, users: Mapping[str, str]) -> None:
        self.users = dict(users)
        self._cache: OrderedDict[bytes, bool] = OrderedDict()
        self._slots = asyncio.Semaphore(MAX_CONCURRENT_CHECKS)

    def replace(self, users: Mapping[str, str]) -> None:
        self.users = dict(users)
        self._cache.clear()

    async def check(self, header: str | None) -> bool:
        """True when ``header`` holds the right password of a configured user."""
        creds = parse_basic(header)
        if creds is None:
            return False
        user, password = creds
        secret = password.encode("utf-8")
        if len(secret) > MAX_PASSWORD_BYTES:
            return False
        known = self.users.get(user)
        hashed = known.encode() if known is not None else _DUMMY_HASH
        key = hashlib.sha256(b"\0".join((user.encode("utf-8"), hashed, secret))).digest()
        verdict = self._cache.get(key)
        if verdict is None:
            async with self._slots:
                verdict = await asyncio.to_thread(_checkpw, secret, hashed)
            self._cache[key] = verdict
            while len(self._cache) > CACHE_SIZE:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(key)
        return verdict and known is not None


class AuthMiddleware:
    """ASGI middleware: requests without valid credentials get 401 before any route runs.

    ``auth()`` returns the current :class:`BasicAuth`, or None when the web config has no users
    (then every request passes). ``rejected(path)`` is called for every refused request.
    """

    def __init__(
        self, app: ASGIApp, auth: Callable[[], BasicAuth | None], rejected: Callable[[str], None]
    ) -> None:
        self.app = app
        self.auth = auth
        self.rejected = rejected

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        auth = self.auth() if scope["type"] == "http" else None
        if auth is None or await auth.check(Headers(scope=scope).get("authorization")):
            await self.app(scope, receive, send)
            return
        self.rejected(str(scope.get("path", "")))
        headers: dict[str, Any] = {"WWW-Authenticate": "Basic"}
        await PlainTextResponse("Unauthorized\n", status_code=401, headers=headers)(scope, receive, send)


def hash_password(password: str, rounds: int = 10) -> str:
    """A bcrypt hash for ``basic_auth_users`` (``$2b$``, which the exporter-toolkit reads too)."""
    return bcrypt.hashpw(password.encode("utf-8"), bcrypt.gensalt(rounds)).decode()
