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

The round is the gateway's own, so it is sent with its own settings (``own_settings``), not
the client's: the client asked for its answer, streamed or not, in so many tokens, perhaps with
a tool call forced or an answer format, and none of that fits a patch read whole by the
gateway. So the round is not streamed, may write as many tokens as the largest patch Σ accepts
(``patch_tokens``), forces no tool and asks for no format, stop sequence, log probabilities or
alternatives; what the model takes as it is (temperature, top_p, effort, a thinking budget,
a tool choice of ``auto`` or ``none``) stays the client's. The history, tools and system
prompt stay exactly as they came, so the provider's cached prefix still serves it (neither the
stream nor the output limit is part of the prompt a provider caches).

A round the model cannot answer as asked is skipped, never retried: a reply that is not one
JSON object, a patch Σ refuses, or an upstream failure leave Σ as the seed made it, and the
boundary goes on with the archive behind it. A client that forces a tool call (``tool_choice``
``required`` or a named tool) gets no handover: the round could unforce it, but a tool choice
that changes between two requests makes Anthropic's cache miss every message, and the round
exists to read the history at the cached price.
"""

from __future__ import annotations

import dataclasses

from skillstate.conversation.model import Json, Message, Params, Request, Text
from skillstate.state.render import NOTE_LABEL, shown_state
from skillstate.state.schema import Bounds, StateSchema

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


PATCH_BYTES_PER_TOKEN = 2
"""The fewest bytes of a patch's JSON one output token is taken to write, for
``patch_tokens``. o200k_base writes compact JSON of English words at about four bytes a token
and of other scripts at two to three; one byte a token (the exact worst case) would ask for
twice the tokens and pass the output limit of models that take 8,192 (a provider refuses a
``max_tokens`` above its model's limit, and the round would be lost)."""


def patch_tokens(bounds: Bounds) -> int:
    """The output limit of a round whose answer is a patch of Σ: enough tokens to write the
    largest patch Σ accepts (``bounds.max_patch_bytes`` of compact JSON, 16 KiB by default,
    so 8,192 tokens) at ``PATCH_BYTES_PER_TOKEN``. A patch longer than that would be refused
    by its size anyway; one cut by the limit is not one JSON object, and is no patch."""
    return -(-bounds.max_patch_bytes // PATCH_BYTES_PER_TOKEN)


def own_settings(params: Params, max_tokens: int) -> Params:
    """The settings of a round the gateway sends on its own behalf and reads whole, from the
    client's ``params``: not streamed; ``max_tokens`` of output, above a thinking budget where
    the client set one (Anthropic counts the thinking inside ``max_tokens`` and refuses a
    limit below the budget); no tool choice that forces a call (the model is asked for
    text), while ``auto`` and ``none`` stay as the client sent them (a tool choice that
    changes between two requests makes Anthropic's cache miss every message); no answer
    format, stop sequences, log probabilities or alternatives. Temperature, top_p, effort
    and the thinking budget stay the client's: the model takes them as they are, and
    neither the stream nor the output limit is part of the prompt a provider caches."""
    choice = params.tool_choice
    if choice is not None and choice.mode not in ("auto", "none"):
        choice = None
    return dataclasses.replace(
        params,
        stream=False,
        max_tokens=max_tokens + (params.thinking_budget or 0),
        tool_choice=choice,
        stop=None,
        output_format=None,
        candidates=None,
        logprobs=None,
    )


def can_hand_over(request: Request) -> bool:
    """Whether the model may answer ``request``'s handover in text: not when the client
    forces a tool call."""
    choice = request.params.tool_choice
    return choice is None or choice.mode in ("auto", "none")


def handover_request(request: Request, state: Json, schema: StateSchema) -> Request:
    """``request`` with the handover instruction appended as a user message, Σ now and its
    keys in it, sent with the round's own settings (``own_settings``, an output limit of
    ``patch_tokens``); its system prompt, tools and history stay as they came."""
    text = (
        f"{_INSTRUCTION}\nΣ now:\n```json\n{shown_state(state)}\n```\n"
        f"State keys:\n{schema.describe()}"
    )
    messages = [*request.messages, Message("user", [Text(text)])]
    params = own_settings(request.params, patch_tokens(schema.bounds))
    return dataclasses.replace(request, messages=messages, params=params)
