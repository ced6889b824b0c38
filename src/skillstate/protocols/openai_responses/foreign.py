"""A Responses body for a request that came from another wire, built from canonical fields only
(that wire's ``extra`` and ``hints`` are ignored).

How the canonical request is reshaped for this wire:

* ``Request.system`` becomes ``instructions``, its texts joined with a blank line.
* The messages become ``input`` items (see ``messages`` and ``turns``): an assistant message
  the items of one model turn, each tool result its own output item (a custom one where the
  call went to a freeform tool), any other message a message item of ``input_text`` and
  ``input_image`` parts.
* Reasoning with a signature becomes a reasoning item (``summary_text`` from the text,
  ``encrypted_content`` from the signature, an id derived from them). Reasoning without one is
  left out, since nothing of it could be replayed: the upstream only accepts an
  ``encrypted_content`` it issued itself.
* Function tools are sent with ``strict: false`` and a schema, the empty one where they have
  none (see ``tools``); a thinking budget without an effort becomes the nearest effort (see
  ``params``); the answer's format follows ``outputs``.
* What this wire cannot carry raises ``ProtocolError``: stop sequences (the Responses API has
  none), another wire's opaque items and provider-defined tools, images in assistant
  messages, ``n`` > 1, log probabilities, and a format type this wire does not define.
"""

from __future__ import annotations

from skillstate.conversation import Json, Request
from skillstate.protocols.openai_responses.messages import encode_input
from skillstate.protocols.openai_responses.params import encode_params
from skillstate.protocols.openai_responses.tools import encode_tools


def encode_foreign(req: Request) -> Json:
    custom = frozenset(tool.name for tool in req.tools if tool.kind == "custom")
    body: Json = {"model": req.model, "input": encode_input(req.messages, own=False, custom=custom)}
    if req.system:
        body["instructions"] = "\n\n".join(part.text for part in req.system)
    if req.tools:
        body["tools"] = encode_tools(req.tools, own=False)
    encode_params(req, body, [], [])
    return body
