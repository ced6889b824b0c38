"""Whether a request that names a session is another conversation's: a subagent sharing its
parent's session id has its own system prompt and its own task. Either alone changes for other
reasons (a host rewrites a line of its system prompt between runs; a user edits the first
message), so it takes both. A session's Σ meta keeps the digests of the first request's
procedure and opening (``marked``); a later request is another's when both differ
(``another_conversation``)."""

from __future__ import annotations

import hashlib

from skillstate.conversation import Json, Request, Text
from skillstate.state.paper import procedure_of


def marked(meta: Json, request: Request) -> None:
    """Keep ``request``'s procedure and the digests of it and of its opening in ``meta``
    (once: a session's first request decides)."""
    if "procedure" not in meta:
        meta["procedure"] = [part.text for part in procedure_of(request)]
        meta["procedure_digest"] = _digest(meta["procedure"])
        meta["opening_digest"] = _digest(_opening(request))


def another_conversation(meta: Json, request: Request) -> bool:
    """Whether ``request`` has both another procedure and another opening than the session's
    first (a session without the digests has no other)."""
    procedure = _digest([part.text for part in procedure_of(request)])
    opening = _digest(_opening(request))
    other_procedure = meta.get("procedure_digest") not in (None, procedure)
    other_opening = meta.get("opening_digest") not in (None, opening)
    return other_procedure and other_opening


def _opening(request: Request) -> list[str]:
    """The texts of the conversation's first user message."""
    for message in request.messages:
        if message.role == "user":
            return [part.text for part in message.parts if isinstance(part, Text)]
    return []


def _digest(texts: list[str]) -> str:
    return hashlib.blake2b("\0".join(texts).encode(), digest_size=12).hexdigest()
