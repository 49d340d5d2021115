"""The token endpoint, as the live service answers it (`POST /token`, docs/contract.md §10): a
client that authenticates first works with only its base URL changed. Any client id and secret
get a token; no read asks for one (every read ignores `Authorization`)."""

from __future__ import annotations

import secrets
import time
from email.utils import formatdate
from urllib.parse import parse_qs

import orjson

from pipeline.api.responses import Response

GRANT_TYPE = "client_credentials"
# The live service's: a token lives 14 days, and `expires_in` is counted a moment after issue.
LIFETIME = 14 * 86400
EXPIRES_IN = LIFETIME - 1


def _error(code: str) -> Response:
    return Response(400, orjson.dumps({"error": code}), store=False)


def answer(body: bytes, now: float | None = None) -> Response:
    """The answer to a token request whose form (`application/x-www-form-urlencoded`, read as
    a form whatever its Content-Type says, as clients send it) is `body`, issued at `now`
    (default: the request's time; a token is a live answer, never a build's output)."""
    form = parse_qs(body.decode("utf-8", "replace"), keep_blank_values=True)
    if form.get("grant_type", [""])[0] != GRANT_TYPE:
        return _error("unsupported_grant_type")
    client_id = form.get("client_id", [""])[0]
    if not client_id:
        return _error("invalid_client")
    issued = int(time.time() if now is None else now)
    token = {
        "access_token": secrets.token_urlsafe(48),
        "token_type": "bearer",
        "expires_in": EXPIRES_IN,
        "userName": client_id,
        ".issued": formatdate(issued, usegmt=True),
        ".expires": formatdate(issued + LIFETIME, usegmt=True),
    }
    return Response(200, orjson.dumps(token), store=False)
