"""The ChatGPT backend's dialect of the Responses wire (``Profile.CHATGPT``), pure.

Codex signed in with ChatGPT sends its requests to ``https://chatgpt.com/backend-api/codex``
(``/responses``, ``/responses/compact``), with the login's access token and a
``ChatGPT-Account-ID`` header. That backend is undocumented and stricter than the public API;
what other proxies learned of it, and what the gateway keeps:

* a request is streamed (``stream: true``) and not stored (``store: false``);
* ``max_output_tokens`` is refused (400);
* ``instructions`` are the client's own: the gateway rewrites ``input`` only;
* the encrypted items (reasoning and compaction items with ``encrypted_content``) and
  ``include: ["reasoning.encrypted_content"]`` pass untouched: the backend decrypts them.

``fit`` makes a body the gateway writes itself (the handover round, a continuation after an
internal call) follow the first three rules. ``unsafe_rewrite`` compares the body the lanes
made of a client's request with the client's own; where it finds a difference the backend may
refuse or misread, the gateway sends the client's bytes as they came instead (its pass-through
fallback: the backend changes, and a request that goes through as it came is one Codex itself
would have sent).
"""

from __future__ import annotations

from typing import Any

from skillstate.conversation import Json
from skillstate.support import jsonio

ENCRYPTED = "encrypted_content"
"""The field of an item only the backend can read."""

KEPT_AS_SENT = ("instructions", "include", "store", "stream")
"""Top-level fields a rewrite must leave exactly as the client sent them (or left out)."""

REFUSED = ("max_output_tokens",)
"""Fields the backend refuses outright."""


def fit(body: Json) -> Json:
    """``body``, written by the gateway, as the backend takes it: streamed, not stored, no
    output limit. ``instructions``, ``include`` and ``input`` are left as they are."""
    fitted = {key: value for key, value in body.items() if key not in REFUSED}
    fitted["stream"] = True
    fitted["store"] = False
    return fitted


def unsafe_rewrite(client: bytes, sent: Json) -> list[str]:
    """What in ``sent`` (the request as the lanes left it, encoded and fitted) the backend may
    refuse or misread, compared with ``client`` (the client's own body): a field of
    ``KEPT_AS_SENT`` changed, a ``REFUSED`` field the client did not send, an encrypted item
    that is not byte for byte one of the client's. Empty: the rewrite is safe to send."""
    try:
        original = jsonio.loads(client)
    except ValueError:
        return ["the client's body is not JSON"]
    if not isinstance(original, dict):
        return ["the client's body is not a JSON object"]
    problems = [f"{key} changed" for key in KEPT_AS_SENT if original.get(key) != sent.get(key)]
    problems += [f"{key} added" for key in REFUSED if key in sent and key not in original]
    theirs = _encrypted(original)  # dicts compare by key and value, whatever the key order
    if any(item not in theirs for item in _encrypted(sent)):
        problems.append("an encrypted item changed")
    return problems


def _encrypted(body: Json) -> list[Json]:
    items: Any = body.get("input")
    if not isinstance(items, list):
        return []
    return [item for item in items if isinstance(item, dict) and ENCRYPTED in item]
