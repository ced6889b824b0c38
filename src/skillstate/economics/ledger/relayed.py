"""A request relayed as bytes (``Exchange.relayed``), read by the recorder off the request
path: its usage and model from the reply's bytes (``protocols.tails``), and only where the
provider reported none the request and the reply decoded, so that the ledger counts them
itself (an estimate, marked so)."""

from __future__ import annotations

from skillstate.conversation import Message, Part, Request, Response, Text, Usage, Wire
from skillstate.economics.exchange import Exchange, Relayed
from skillstate.economics.metered import Metered, counted, meter
from skillstate.protocols import adapter
from skillstate.protocols.streams import StreamObserver
from skillstate.protocols.tails import TailReply
from skillstate.support import jsonio


def replies_counted(exchange: Exchange) -> tuple[list[tuple[Usage, bool]], str]:
    """Each upstream reply of ``exchange`` as the ledger counts it (``metered.counted``: the
    provider's usage, else the gateway's own count, marked estimated), in order, and the model
    they are priced as (the one the reply names, else the one asked for). The ledger and a
    key's budget both ask: a relayed reply is read from its bytes once, and only the counts
    are kept on ``relayed`` (a request decoded to count it is let go at once)."""
    relayed = exchange.relayed
    if relayed is not None:
        if relayed.read is None:  # two threads may both read it: either will do
            metered, model = read_relayed(exchange, relayed)
            relayed.read = [counted(each) for each in metered], model
        return relayed.read
    model = exchange.model
    if exchange.response is not None and exchange.response.model:
        model = exchange.response.model
    return [counted(each) for each in exchange.metered], model


def read_relayed(exchange: Exchange, relayed: Relayed) -> tuple[list[Metered], str]:
    """The reply the client got as the ledger meters it (none where none came), and the
    model the reply names (the one asked for where it names none)."""
    reply = relayed.reply
    if reply is None:
        return [], exchange.model
    usage, model = reply.usage()
    if usage is not None:
        return [Metered(usage)], model or exchange.model
    sent = decoded_request(exchange.client_wire, relayed.body)
    if sent is None:
        return [Metered(None, sent)], model or exchange.model
    said = reply.chat_text()  # most streams without usage: read without decoding events
    if said is not None:
        text, named = said
        parts: list[Part] = [Text(text)] if text else []
        metered = Metered(None, sent, Message("assistant", parts))
        return [metered], named or model or exchange.model
    response = decoded_reply(reply)
    if response is None:
        return [Metered(None, sent)], model or exchange.model
    return [meter(None, sent, response.message)], response.model or model or exchange.model


def decoded_request(wire: Wire, body: bytes) -> Request | None:
    """The request ``body`` holds, or None where it does not decode (the upstream had the
    last word on it)."""
    try:
        return adapter(wire).decode_request(jsonio.loads(body))
    except Exception:
        return None


_HISTORY_KEYS = {Wire.CHAT: b'"messages"', Wire.MESSAGES: b'"messages"', Wire.RESPONSES: b'"input"'}


def holds_all(before: bytes, after: bytes, wire: Wire) -> bool:
    """Whether the request body ``after`` holds all of ``before`` as a prefix cache sees it,
    told from the bytes: the same body again, or ``before`` with messages appended and nothing
    else changed (the same before the history's key, the history's bytes the same up to where
    ``before``'s array closes and ``after``'s goes on with another element, and ``before``'s
    bytes after its array the end of ``after``). False where it cannot tell (a client that
    moved a cache marker, reordered its keys, edited anything): the caller decodes then."""
    if before == after:
        return True
    key = _HISTORY_KEYS[wire]
    start, begin = before.find(key), after.find(key)
    if start < 0 or start != begin or before[:start] != after[:start]:
        return False
    old = memoryview(before)
    low, high = start, min(len(before), len(after))
    while low < high:  # where they part, by halving: [start, low) is known to be the same
        middle = (low + high + 1) // 2
        if after.startswith(old[low:middle], low):  # a memcmp, no copy
            low = middle
        else:
            high = middle - 1
    closed = low < len(before) and before[low : low + 1] == b"]"
    goes_on = after[low : low + 1] == b","
    return closed and goes_on and after.endswith(before[low + 1 :])


def decoded_reply(reply: TailReply) -> Response | None:
    if not reply.streamed:
        try:
            return adapter(reply.wire).decode_response(reply.parsed or jsonio.loads(reply.raw))
        except Exception:
            return None
    observer = StreamObserver(reply.wire)
    for chunk in reply.chunks:
        observer.feed(chunk)
    return observer.close()
