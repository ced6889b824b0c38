"""A request relayed as bytes (``Exchange.relayed``), read by the recorder off the request
path: its usage and model from the reply's bytes (``protocols.tails``), and only where the
provider reported none the request and the reply decoded, so that the ledger counts them
itself (an estimate, marked so)."""

from __future__ import annotations

from skillstate.conversation import Message, Part, Request, Response, Text, Wire
from skillstate.economics.exchange import Exchange, Relayed
from skillstate.economics.metered import Metered, meter
from skillstate.protocols import adapter
from skillstate.protocols.streams import StreamObserver
from skillstate.protocols.tails import TailReply
from skillstate.support import jsonio


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
    response = _decoded_reply(reply)
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


def _decoded_reply(reply: TailReply) -> Response | None:
    if not reply.streamed:
        try:
            return adapter(reply.wire).decode_response(reply.parsed or jsonio.loads(reply.raw))
        except Exception:
            return None
    observer = StreamObserver(reply.wire)
    for chunk in reply.chunks:
        observer.feed(chunk)
    return observer.close()
