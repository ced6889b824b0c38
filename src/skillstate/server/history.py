"""The responses the gateway answered in the Responses wire from another upstream, kept by id so
a later ``previous_response_id`` can be written out for that upstream
(``protocols.openai_responses.history``). Kept in the archive's blob store, under a key derived
from the id and the tenant whose session it answered (``storage.tenants``), as the canonical
messages of the conversation up to and including the reply.

An upstream's ids need not be unique across callers (Ollama's Chat ids are ``chatcmpl-`` and
one of 999 numbers), and the blob store keeps the first blob put under a key: so each tenant's
replies are kept apart from every other's (and from those of admins' and key-less callers'), and
no caller's reply can take, or hold, the place of another tenant's under the same id."""

from __future__ import annotations

import hashlib

from skillstate.archive.serialize import decode_message, encode_message
from skillstate.conversation import Json, Message, Request, Response
from skillstate.protocols.openai_responses.history import continued_from, kept, previous_response
from skillstate.storage.protocols import ArchiveStore
from skillstate.storage.tenants import owner
from skillstate.support import jsonio


class UnknownResponse(Exception):
    def __init__(self, response_id: str) -> None:
        super().__init__(response_id)
        self.response_id = response_id


class ResponseHistory:
    __slots__ = ("_store",)

    def __init__(self, store: ArchiveStore) -> None:
        self._store = store

    async def expand(self, request: Request, tenant: str | None) -> tuple[Request, str | None]:
        """``request`` written out in full when it continues a response kept for ``tenant``
        (None: an admin or a key-less caller), with the session that response belonged to;
        raises ``UnknownResponse`` for an id never kept for it."""
        response_id = previous_response(request)
        if response_id is None:
            return request, None
        raw = await self._store.get(_key(response_id, tenant))
        if raw is None:
            raise UnknownResponse(response_id)
        doc: Json = jsonio.loads(raw)
        earlier = [decode_message(m) for m in doc["messages"]]
        return continued_from(request, earlier), doc.get("session")

    async def keep(self, request: Request, response: Response, session: str) -> None:
        """Keep the conversation ``response`` ends, unless the client said ``store: false``."""
        if not kept(request) or not response.id:
            return
        messages: list[Message] = [*request.messages, response.message]
        doc = {"session": session, "messages": [encode_message(m) for m in messages]}
        await self._store.put(_key(response.id, owner(session)), jsonio.dumps(doc))


def _key(response_id: str, tenant: str | None) -> str:
    """The blob key of a reply kept for ``tenant`` (None: an admin's or a key-less caller's,
    as before there were tenants); a tenant has no ``/``, so no two callers' keys meet."""
    if tenant is None:
        return "resp-" + hashlib.sha256(response_id.encode()).hexdigest()[:40]
    return "resp-t-" + hashlib.sha256(f"{tenant}/{response_id}".encode()).hexdigest()[:40]
