"""The handover: the model writes Σ from the whole history once, just before it is collapsed.

A hybrid session is passed through untouched until its first boundary (``CollapseOptions.
passthrough_until_boundary``), so the model has never been offered ``skill_state``: at that
boundary Σ holds only what the deterministic seed read off the tool calls. Collapsing then
would leave everything else the model learned (facts, decisions, what is left to do) in the
archive, found again only if the model thinks to ``recall`` it.

So the first boundary starts with one hidden round, the handover: the client's request exactly
as it came (its tools, its system prompt, its history, its cache markers), with one user
message appended that asks the model to reply with a patch of Σ and nothing else. Its prefix is
the one the provider cached for the previous request, so the history is read at the cached
price once more; the patch is applied (``merge.apply_patch`` is the validator), and the
boundary request that follows carries the new Σ. Nothing else of the round reaches the client;
its usage is counted as state overhead (``HANDOVER_ROUND``).

A round the model cannot answer as asked is skipped, never retried: a reply that is not one
JSON object, a patch Σ refuses, or an upstream failure leave Σ as the seed made it, and the
boundary goes on with the archive behind it. A client that forces a tool call (``tool_choice``
``required`` or a named tool) gets no handover: the model could not reply in text.
"""

from __future__ import annotations

import dataclasses

from skillstate.conversation.model import Json, Message, Request, Text
from skillstate.state.render import NOTE_LABEL, shown_state
from skillstate.state.schema import StateSchema

HANDOVER_ROUND = "handover"
"""The cause of the handover round in the ledger (``Rounds`` and ``Row.cause``)."""

HANDOVER_HEADING = f"{NOTE_LABEL} The conversation above is about to be condensed."
"""The first line of the handover instruction (a scripted model in the benchmark knows the
request by it)."""

_INSTRUCTION = (
    HANDOVER_HEADING + " Every turn but the newest few will be replaced by the state Σ "
    "below and kept word for word in an archive you can search later with the recall tool. "
    "Before that happens, write into Σ what you will still need from those turns: the task "
    "and its constraints, decisions made, facts found (names, numbers, paths, values), what "
    "was tried and failed, what is left to do. Reply with one JSON object and nothing else: "
    "a JSON Merge Patch of Σ (only what changes; objects merge, arrays replace whole, null "
    "deletes a key; collections are objects keyed by short slugs). Do not call a tool and do "
    "not continue the task in this reply: the next request continues it."
)


def can_hand_over(request: Request) -> bool:
    """Whether the model may answer ``request``'s handover in text: not when the client
    forces a tool call."""
    choice = request.params.tool_choice
    return choice is None or choice.mode in ("auto", "none")


def handover_request(request: Request, state: Json, schema: StateSchema) -> Request:
    """``request`` with the handover instruction appended as a user message, Σ now and its
    keys in it; nothing else changes (a streamed request stays one: the reply is read whole,
    and the provider's cache does not care)."""
    text = (
        f"{_INSTRUCTION}\nΣ now:\n```json\n{shown_state(state)}\n```\n"
        f"State keys:\n{schema.describe()}"
    )
    messages = [*request.messages, Message("user", [Text(text)])]
    return dataclasses.replace(request, messages=messages)
