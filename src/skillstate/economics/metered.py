"""One upstream reply as the ledger counts it: ``Metered``.

A provider says what a reply cost in its usage, but not every one does: llama.cpp's server
sends no usage in a stream, a Chat stream carries one only when asked
(``stream_options.include_usage``; mode off never asks), a stream cut short ends before it.
A reply without usage is not free: its usage is unknown. So each reply is kept with what the
gateway needs to count it itself, the request that round sent and the message that came back,
and ``counted`` gives the provider's figures where it reported them, else the gateway's own
count, marked estimated. The contract: an unknown usage is never read as zeros, and an
estimate always says it is one (``Row.estimated``, ``/cost``'s ``estimated_requests``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass, field

from skillstate.conversation import Message, Reasoning, Request, Usage
from skillstate.economics import tokenizer


@dataclass(frozen=True, slots=True)
class Metered:
    """One upstream reply: the usage its provider reported (None: it reported none), and,
    for the gateway to count itself where it did not, the request that round sent and the
    message that came back (as far as it came)."""

    usage: Usage | None
    sent: Request | None = None
    reply: Message | None = None
    _estimate: list[Usage] = field(default_factory=list, compare=False, repr=False)
    """The gateway's own count, once made (``counted``): the ledger, the usage a client is
    shown and a key's budget all read it, and it is made once."""


def meter(usage: Usage | None, sent: Request, reply: Message) -> Metered:
    """A reply's ``Metered``: its usage, with the request that round sent and a copy of the
    reply (whoever holds the reply may build on it) kept only where the usage is unknown."""
    if usage is not None:
        return Metered(usage)
    return Metered(None, sent, dataclasses.replace(reply, parts=list(reply.parts)))


def counted(metered: Metered) -> tuple[Usage, bool]:
    """The reply's usage, and whether it is the gateway's own estimate: the provider's
    figures as they are, else the request and the reply counted with o200k_base
    (``tokenizer.count_request`` and ``message_tokens``; the reasoning is the reply's
    reasoning text). An estimate has no cache reads or writes: the gateway cannot see the
    provider's cache, so it is priced as uncached input, the most it may have cost."""
    if metered.usage is not None:
        return metered.usage, False
    if metered._estimate:
        return metered._estimate[0], True
    sent = tokenizer.count_request(metered.sent) if metered.sent is not None else 0
    reply = metered.reply
    output = reasoning = 0
    if reply is not None and reply.parts:
        output = tokenizer.message_tokens(reply)
        reasoning = sum(
            tokenizer.count_tokens(part.text) for part in reply.parts if isinstance(part, Reasoning)
        )
    estimate = Usage(input=sent, output=output, reasoning=reasoning)
    metered._estimate.append(estimate)  # two threads may both count: the first one read wins
    return metered._estimate[0], True


def total(usages: Iterable[Usage | None]) -> Usage | None:
    """The usages summed, field by field; None when any is unknown (a sum that misses a
    part is not the sum, and is not shown as one)."""
    summed = Usage()
    for usage in usages:
        if usage is None:
            return None
        summed = summed + usage
    return summed
