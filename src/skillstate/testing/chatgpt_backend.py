"""A fake of the ChatGPT backend Codex uses with a ChatGPT login: the scripted upstream (a real
loopback server) under ``/backend-api/codex``, with that backend's rules.

What it keeps, as other proxies found the real one to (it is undocumented):

* every request carries ``Authorization: Bearer <token>`` and ``ChatGPT-Account-ID`` with the
  values it was made with (else 401, and nothing is served);
* ``POST /responses`` must be streamed, must not be stored (``store`` false), must not set
  ``max_output_tokens`` and (``require_instructions``) must carry ``instructions``: else a 400
  naming the rule, in the Responses API's error shape;
* ``POST /responses/compact`` answers a compaction (the user messages, then one ``compaction``
  item whose ``encrypted_content`` only this backend could read), as JSON;
* ``GET /models`` lists its models.

A request that broke a rule is recorded like any other and named in ``broken`` (its index and
the rule), so a test sees both what arrived and what the backend would have refused. The model
is played by ``policy`` as in ``ScriptedUpstream``.

Codex 0.171 itself (observed offline against a loopback server, provider with
``requires_openai_auth``) sends no ``instructions`` when the models list it gets gives it no
metadata for the model (its system prompt then travels as ``developer`` input items): a test
that runs the real CLI against this fake turns ``require_instructions`` off and checks instead
that the gateway neither adds nor changes them.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence

from aiohttp import web

from skillstate.support import jsonio
from skillstate.testing.policies import Policy, default_policy
from skillstate.testing.recording import RecordedRequest
from skillstate.testing.replies import Reply, ScriptedError
from skillstate.testing.upstream import ScriptedUpstream

PREFIX = "/backend-api/codex"
"""Where the backend's routes sit on its host (``chatgpt_base_url``'s path)."""

TOKEN = "eyJhbGciOiJub25lIn0.eyJzdWIiOiJ0ZXN0In0.c2ln"
"""A JWT-shaped access token (the gateway tells a ChatGPT login by its shape)."""
ACCOUNT = "acct-test-0001"
ACCOUNT_HEADER = "chatgpt-account-id"
COMPACTED = "gAAAAB-fake-compaction-only-the-backend-reads"
"""The ``encrypted_content`` of the compaction items this fake writes."""


class ChatGPTBackend(ScriptedUpstream):
    """``async with ChatGPTBackend(policy) as backend:`` serves on a free port of 127.0.0.1;
    ``backend.base_url`` is what ``chatgpt_base_url`` names (``url`` + ``PREFIX``)."""

    def __init__(
        self,
        policy: Policy = default_policy,
        *,
        token: str = TOKEN,
        account: str = ACCOUNT,
        require_instructions: bool = True,
        models: Sequence[str] = ("test-model",),
    ) -> None:
        super().__init__(self._ruled, models=models)
        self.played = policy
        """The model's policy (``policy`` is this backend's rules in front of it)."""
        self.token = token
        self.account = account
        self.require_instructions = require_instructions
        self.broken: list[tuple[int, str]] = []
        """(request index, rule) of each request refused for a rule (401s have index -1)."""

    @property
    def base_url(self) -> str:
        return self.url + PREFIX

    async def _handle(self, request: web.Request) -> web.StreamResponse:
        if not request.path.startswith(PREFIX + "/"):
            message = f"Invalid URL ({request.method} {request.path})"
            return web.json_response({"detail": message}, status=404)
        if request.headers.get("authorization") != f"Bearer {self.token}":
            return self._unauthorized("the bearer token is missing or not this login's")
        if request.headers.get(ACCOUNT_HEADER) != self.account:
            return self._unauthorized("ChatGPT-Account-ID is missing or not this login's")
        path = request.path[len(PREFIX) :]
        inner = request.clone(rel_url=request.rel_url.with_path(path, keep_query=True))
        if inner.method == "POST" and inner.path.rstrip("/") == "/responses/compact":
            return await self._compact(inner)
        return await super()._handle(inner)

    def _unauthorized(self, why: str) -> web.Response:
        self.broken.append((-1, why))
        body = {"error": {"message": why, "type": "invalid_request_error", "code": None}}
        return web.json_response(body, status=401)

    def _ruled(self, recorded: RecordedRequest) -> Reply:
        """The backend's rules, then the model."""
        rule = self.rule_broken(recorded)
        if rule is not None:
            self.broken.append((recorded.index, rule))
            return Reply(error=ScriptedError(400, rule, "invalid_request_error"))
        return self.played(recorded)

    def rule_broken(self, recorded: RecordedRequest) -> str | None:
        """The first rule a ``/responses`` request breaks, in the backend's words."""
        body = recorded.json if isinstance(recorded.json, dict) else {}
        if body.get("stream") is not True:
            return "Stream must be set to true"
        if body.get("store") is not False:
            return "Store must be set to false"
        if "max_output_tokens" in body:
            return "Unsupported parameter: max_output_tokens"
        if self.require_instructions and not body.get("instructions"):
            return "Instructions are required"
        return None

    async def _compact(self, request: web.Request) -> web.StreamResponse:
        recorded = await self._record(request, None)
        body = recorded.json if isinstance(recorded.json, dict) else {}
        if "max_output_tokens" in body:
            rule = "Unsupported parameter: max_output_tokens"
            self.broken.append((recorded.index, rule))
            error = {"message": rule, "type": "invalid_request_error", "code": None}
            return web.json_response({"error": error}, status=400)
        given = body.get("input")
        items = given if isinstance(given, list) else []
        users = [
            item
            for item in items
            if isinstance(item, dict) and item.get("type", "message") == "message"
            if item.get("role") == "user"
        ]
        compaction = {
            "type": "compaction",
            "id": "cmp_" + uuid.uuid4().hex,
            "encrypted_content": COMPACTED,
        }
        answer = {
            "id": "resp_" + uuid.uuid4().hex,
            "object": "response.compaction",
            "output": [*users, compaction],
            "usage": {"input_tokens": len(recorded.body) // 4, "output_tokens": 16},
        }
        raw = jsonio.dumps(answer)
        self.answers[recorded.index] = bytearray(raw)
        return web.Response(body=raw, content_type="application/json")
