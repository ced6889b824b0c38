"""Upstream profiles on the wire: what the gateway does differently for an upstream of the
compatible profile (pure). docs/upstreams.md is the user's side.

``Profile.OFFICIAL`` (config word ``openai``) is the wire's own provider; ``Profile.COMPATIBLE``
is any other server of the wire (``conversation.Profile``). An ``[[upstreams]]`` table may say
which (``profile``); left at ``auto``, ``upstream.profiles.detect`` decides from the base URL.

What a compatible upstream changes:

* The body the gateway encodes itself for a Chat upstream: ``fit`` (content ``""`` beside tool
  calls, no ``developer`` role, ``max_tokens``: ``openai_chat.compatible``). Bodies of the
  other wires go as they are, and so does a pass-through's, whose bytes are the client's own.
* A 500 whose body is a validation error is the request's fault, not the server's
  (``refused_as_invalid``): llama-cpp-python answers every request its schema refuses with a
  500. The client is told 400 with the server's message; nothing is tried again, and the
  upstream's circuit counts an answer, not a failure.
* A call whose first byte did not come in time is not tried again by default (the config's
  ``retry_first_byte_timeout`` per upstream): a local server is one queue, and a request its
  client left may still be running there, so a retry doubles the work and blocks the next
  requests. The official providers are tried again.
"""

from __future__ import annotations

import re
from typing import Any

from skillstate.conversation import Json, Profile, Wire
from skillstate.protocols.openai_chat.compatible import fit_compatible
from skillstate.protocols.openai_responses import chatgpt


def fit(body: Json, profile: Profile, wire: Wire) -> Json:
    """``body``, encoded by the gateway for an upstream of ``wire``, as that upstream takes
    it: unchanged but for a compatible Chat upstream (``openai_chat.compatible``) and the
    ChatGPT backend (``openai_responses.chatgpt``)."""
    if profile is Profile.COMPATIBLE and wire is Wire.CHAT:
        return fit_compatible(body)
    if profile is Profile.CHATGPT and wire is Wire.RESPONSES:
        return chatgpt.fit(body)
    return body


_VALIDATION = re.compile(r"\bvalidation errors?\b|'loc': \('body'", re.IGNORECASE)
"""A message that names a validation error: pydantic's ``1 validation error for
CreateChatCompletionRequest``, FastAPI's ``2 validation errors:`` or the list of errors it
prints (``[{'type': 'missing', 'loc': ('body', 'messages', 1, ...``)."""

_OF_A_RESPONSE = re.compile(
    r"\bvalidation errors? for \w*Response\b|'loc': \('response'", re.IGNORECASE
)
"""A validation error of the server's own reply: the server's fault, not the request's."""


def refused_as_invalid(status: int, body: Json | None) -> bool:
    """Whether a refusal with ``status`` and (parsed) ``body`` is a 500 that says the request
    was invalid, which a compatible server sends where OpenAI sends 400 (llama-cpp-python
    wraps every exception, its schema's refusals included, as a 500 ``internal_server_error``
    whose message is the exception's text). Such a body: an error whose ``type`` or ``code``
    is ``invalid_request_error`` (OpenAI's and Anthropic's shapes), FastAPI's ``detail`` list
    with an error located in the request ``body``, or an error message naming a validation
    error of the request (``_VALIDATION``, not one of the server's own reply). Any other
    status is left as it is: a 4xx is the request's fault already, another 5xx the server's."""
    if status != 500 or not isinstance(body, dict):
        return False
    detail = body.get("detail")
    if isinstance(detail, list) and any(_in_body(item) for item in detail):
        return True
    error: Any = body.get("error")
    if isinstance(error, str):
        return _names_validation(error)
    if not isinstance(error, dict):
        return False
    if "invalid_request_error" in (error.get("type"), error.get("code")):
        return True
    message = error.get("message")
    return isinstance(message, str) and _names_validation(message)


def _in_body(item: Any) -> bool:
    """A FastAPI validation error located in the request's body: ``{"loc": ["body", ...]}``."""
    loc = item.get("loc") if isinstance(item, dict) else None
    return isinstance(loc, list) and loc[:1] == ["body"]


def _names_validation(message: str) -> bool:
    return _VALIDATION.search(message) is not None and _OF_A_RESPONSE.search(message) is None
