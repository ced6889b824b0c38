"""The request settings a Responses ``response`` object repeats, as the real API does.

The SDK's ``Response`` model requires ``tools``, ``tool_choice`` and ``parallel_tool_calls``;
the API also sends ``instructions``, ``temperature``, ``top_p`` and ``max_output_tokens`` (null
when unset) and, when the request set them, ``reasoning``, ``text``, ``metadata``, ``store`` and
the like. Values come from the client's own request, never from what the gateway sent upstream
(which may carry injected tools or a rewritten prompt).
"""

from __future__ import annotations

import dataclasses
import hashlib
import itertools

from skillstate.conversation import Json, ProtocolError, Request
from skillstate.protocols.openai_responses.request import encode_request
from skillstate.protocols.openai_responses.turns import IdMaker

_ALWAYS: Json = {
    "instructions": None,
    "max_output_tokens": None,
    "parallel_tool_calls": True,
    "temperature": None,
    "tool_choice": "auto",
    "tools": [],
    "top_p": None,
}
_REQUIRED = ("parallel_tool_calls", "tool_choice", "tools")
_WHEN_SET = (
    "background",
    "max_tool_calls",
    "metadata",
    "previous_response_id",
    "prompt_cache_key",
    "reasoning",
    "safety_identifier",
    "service_tier",
    "store",
    "text",
    "top_logprobs",
    "truncation",
    "user",
)
#: Every field of a response object that repeats the request.
ECHO_KEYS = frozenset((*_ALWAYS, *_WHEN_SET))


def echo(request: Request | None) -> Json:
    fields = dict(_ALWAYS)
    if request is None:
        return fields
    try:
        body = encode_request(dataclasses.replace(request, messages=[]))
    except ProtocolError:
        return fields
    for key in ECHO_KEYS:
        if key in body and not (key in _REQUIRED and body[key] is None):
            fields[key] = body[key]
    return fields


def custom_names(request: Request | None) -> frozenset[str]:
    """Names of the client's freeform tools: another wire's calls to them become custom."""
    if request is None:
        return frozenset()
    return frozenset(t.name for t in request.tools if t.kind == "custom")


def item_ids(response_id: str) -> IdMaker:
    """Ids for output items another wire gave none: derived from the response id and the
    item's position, so the same response always gets the same ids."""
    counter = itertools.count()

    def make(prefix: str, seed: str) -> str:
        digest = hashlib.sha256(f"{response_id}:{next(counter)}".encode()).hexdigest()
        return f"{prefix}_{digest[:32]}"

    return make
