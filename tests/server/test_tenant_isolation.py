"""Tenants never see or change each other's data, on any route: random callers (three tenants'
keys and an admin's) x the sessions and archive refs of every owner (and guessed ones) x the
routes that read or change them, over HTTP (/state, /cost, /cost/requests, /metrics), MCP
(the state, retrieve and resource tools at /mcp) and the CLI (``skillstate state show``,
``skillstate stats``). A tenant finds its own sessions, written ``id`` or ``<tenant>/id``;
another owner's session or ref is answered exactly as a guessed one (404, an error result, a
failing command), and no answer carries another owner's marks.

One gateway (paper mode) serves every example, in a thread of its own: each tenant ran the
sessions ``s1`` and ``s2`` (the same names for all: they must not meet) and archived a text
through MCP; the admin ran ``ops1``. Each session's Σ holds a mark naming its owner and
session, each archived text a mark naming its owner."""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Coroutine, Iterator
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import Any, TypeVar

import aiohttp
import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skillstate.cli.main import cli
from skillstate.testing import RecordedRequest, Reply, ScriptedUpstream
from skillstate.testing.gateway import RunningGateway, gateway_for
from skillstate.testing.keys import GatewayKeys, bearer
from skillstate.testing.mcp_client import connected, text_of

TENANTS = ("alpha", "bravo", "charlie")
ADMIN = "admin"
OWNERS = (*TENANTS, ADMIN)
SESSIONS = {**{tenant: ("s1", "s2") for tenant in TENANTS}, ADMIN: ("ops1",)}
MARK = re.compile(r"MARK-[a-z]+-[a-z0-9]+")
T = TypeVar("T")


def noting(request: RecordedRequest) -> Reply:
    """Paper mode's model: notes the marks the request's newest instruction carries."""
    marks = MARK.findall(request.body.decode())
    patch = {"findings": {marks[-1]: "seen"}} if marks else {}
    return Reply(text=json.dumps({"state_patch": patch, "action": "noted"}))


def archived_text(owner: str) -> str:
    return f"ARCHIVED-{owner}\n" + "\n".join(f"line {n} of {owner}'s log" for n in range(400))


@dataclass
class World:
    """The gateway, its keys (by owner) and what each owner holds."""

    loop: asyncio.AbstractEventLoop
    gateway: RunningGateway
    keys: dict[str, str] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)

    def run(self, work: Coroutine[Any, Any, T]) -> T:
        return asyncio.run_coroutine_threadsafe(work, self.loop).result(60)

    @property
    def url(self) -> str:
        return self.gateway.url


async def _build(stack: AsyncExitStack, loop: asyncio.AbstractEventLoop) -> World:
    up = await stack.enter_async_context(ScriptedUpstream(noting))
    gateway = await stack.enter_async_context(gateway_for(up.url, settings={"mode": "paper"}))
    keys = GatewayKeys(gateway)
    world = World(loop, gateway)
    for owner in OWNERS:
        world.keys[owner], _ = await keys.make(owner, admin=owner == ADMIN)
    async with aiohttp.ClientSession() as http:
        for owner, sessions in SESSIONS.items():
            for session in sessions:
                body = {
                    "model": "gpt-4.1",
                    "messages": [{"role": "user", "content": f"Note MARK-{owner}-{session}."}],
                }
                headers = {**bearer(world.keys[owner]), "x-skillstate-session": session}
                async with http.post(
                    f"{gateway.url}/v1/chat/completions", json=body, headers=headers
                ) as r:
                    assert r.status == 200, await r.text()
    for owner in OWNERS:
        async with _mcp(world, owner) as client:
            done = await client.call_tool("compress", {"content": archived_text(owner)})
            world.refs[owner] = json.loads(text_of(done))["ref"]
    return world


def _mcp(world: World, caller: str) -> Any:
    """The SDK's MCP client at /mcp, with ``caller``'s key."""
    return connected(world.url + "/mcp", bearer(world.keys[caller]))


@pytest.fixture(scope="module")
def world() -> Iterator[World]:
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    stack = AsyncExitStack()
    try:
        yield asyncio.run_coroutine_threadsafe(_build(stack, loop), loop).result(120)
    finally:
        asyncio.run_coroutine_threadsafe(stack.aclose(), loop).result(60)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)


@dataclass(frozen=True)
class Case:
    caller: str
    owner: str
    session: str
    """As the caller writes it."""
    ref: str
    guessed: bool

    @property
    def visible(self) -> bool:
        """Whether the caller may see what the case names."""
        return not self.guessed and (self.caller == ADMIN or self.caller == self.owner)

    @property
    def held(self) -> str:
        """The session as the store holds it (for a named one)."""
        return (
            self.session
            if self.owner == ADMIN or "/" in self.session
            else f"{self.owner}/{self.session}"
        )


@st.composite
def cases(draw: st.DrawFn) -> Case:
    caller = draw(st.sampled_from(OWNERS))
    owner = draw(st.sampled_from(OWNERS))
    guessed = draw(st.booleans())
    if guessed:
        name = draw(st.from_regex(r"[A-Za-z0-9._:-]{1,24}", fullmatch=True))
        tenant = draw(st.sampled_from([None, *TENANTS]))
        session = name if tenant is None else f"{tenant}/{name}"
        ref = "ar_" + draw(st.from_regex(r"[0-9a-f]{24}", fullmatch=True))
        if session.split("/")[-1] in ("s1", "s2", "ops1"):
            session += "x"
    else:
        name = draw(st.sampled_from(SESSIONS[owner]))
        bare = owner == ADMIN or (caller == owner and draw(st.booleans()))
        session = name if bare else f"{owner}/{name}"
        ref = ""
    return Case(caller, owner, session, ref, guessed)


def leaks(case: Case, text: str) -> list[str]:
    """The marks of owners other than a tenant caller's that ``text`` holds (the session the
    caller asked for aside: an answer may say what it was asked)."""
    if case.caller == ADMIN:
        return []
    if case.session:
        text = text.replace(case.session, "")
    others = [owner for owner in OWNERS if owner != case.caller]
    marks = [f"MARK-{o}-" for o in others] + [f"ARCHIVED-{o}" for o in others]
    marks += [f"{o}/" for o in others if o != ADMIN] + ['"ops1"']
    return [mark for mark in marks if mark in text]


async def _http(world: World, case: Case, method: str, path: str, **query: str) -> tuple[int, str]:
    headers = bearer(world.keys[case.caller])
    async with (
        aiohttp.ClientSession() as http,
        http.request(method, world.url + path, params=query, headers=headers) as reply,
    ):
        return reply.status, await reply.text()


def _ref(world: World, case: Case) -> str:
    return case.ref or world.refs[case.owner]


async def _route(world: World, case: Case, route: str) -> tuple[bool, str]:
    """Whether ``route`` found what ``case`` names, and its whole answer."""
    if route == "state":
        status, text = await _http(world, case, "GET", "/state", session=case.session)
        assert status in (200, 404), text
        return status == 200, text
    if route == "collapse":
        status, text = await _http(world, case, "POST", "/state/collapse", session=case.session)
        assert status in (202, 404), text
        return status == 202, text
    if route == "list":
        status, text = await _http(world, case, "GET", "/state")
        assert status == 200
        listed = {line["session"] for line in json.loads(text)["sessions"]}
        return case.held in listed, text
    if route == "cost":
        status, text = await _http(world, case, "GET", "/cost", session=case.session)
        assert status == 200, text
        return json.loads(text)["totals"]["requests"] > 0, text
    if route == "requests":
        status, text = await _http(world, case, "GET", "/cost/requests", session=case.session)
        assert status == 200, text
        return bool(json.loads(text)["requests"]), text
    async with _mcp(world, case.caller) as client:
        if route == "mcp-state":
            done = await client.call_tool("state", {"session": case.session})
            text = text_of(done)
            return f"MARK-{case.owner}-" in text, text
        if route == "mcp-retrieve":
            done = await client.call_tool("retrieve", {"ref": _ref(world, case)})
            return not done.is_error, text_of(done)
        if route == "mcp-resource":
            uri = f"skillstate://archive/{_ref(world, case)}"
            try:
                read = await client.read_resource(uri)
            except Exception as error:  # the SDK raises the server's error
                return False, str(error)
            return True, json.dumps(read.model_dump(mode="json"))
        assert route == "mcp-resources"
        listed = await client.list_resources()
        text = json.dumps(listed.model_dump(mode="json"))
        return _ref(world, case) in text, text


def _cli(world: World, case: Case, route: str) -> tuple[bool, str]:
    env = {"SKILLSTATE_AUTH_TOKEN": world.keys[case.caller]}
    if route == "cli-show":
        args = ["state", "show", case.session, "--json", "--url", world.url]
    else:
        args = ["stats", "--session", case.session, "--json", "--url", world.url]
    done = CliRunner().invoke(cli, args, env=env)
    text = done.stdout + done.stderr
    if route == "cli-show":
        return done.exit_code == 0, text
    assert done.exit_code == 0, text
    return json.loads(done.stdout)["totals"]["requests"] > 0, text


SESSION_ROUTES = (
    "state",
    "collapse",
    "list",
    "cost",
    "requests",
    "mcp-state",
    "cli-show",
    "cli-stats",
)
REF_ROUTES = ("mcp-retrieve", "mcp-resource", "mcp-resources")


@settings(
    max_examples=120,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(case=cases(), route=st.sampled_from(SESSION_ROUTES + REF_ROUTES))
def test_no_caller_reads_another_tenants_data(world: World, case: Case, route: str) -> None:
    if route.startswith("cli-"):
        found, text = _cli(world, case, route)
    else:
        found, text = world.run(_route(world, case, route))
    assert found == case.visible, (case, route, text[:400])
    assert not leaks(case, text), (case, route, leaks(case, text))


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(case=cases().filter(lambda case: not (case.visible or case.guessed or case.owner == ADMIN)))
def test_no_tenant_changes_another_tenants_data(world: World, case: Case) -> None:
    """A reset or a patch of another tenant's session is refused as for an unknown one, and
    the session is as it was. (A tenant cannot even name an admin's session: ``ops1`` is its
    own ``<tenant>/ops1``.)"""
    engine = world.gateway.context.engine
    assert engine is not None
    before = world.run(engine.store.load(case.held))
    status, text = world.run(_http(world, case, "DELETE", "/state", session=case.session))
    assert status == 404 and not leaks(case, text), text

    async def patch() -> Any:
        async with _mcp(world, case.caller) as client:
            return await client.call_tool(
                "state", {"session": case.session, "patch": {"objective": "taken over"}}
            )

    assert world.run(patch()).is_error
    after = world.run(engine.store.load(case.held))
    assert after.state == before.state and after.version >= 1
    assert world.run(engine.archive.entries(f"{case.owner}/mcp"))


def test_a_tenant_sees_its_own_series_only_in_metrics(world: World) -> None:
    for caller in OWNERS:
        case = Case(caller, caller, "", "", False)
        status, text = world.run(_http(world, case, "GET", "/metrics"))
        assert status == 200
        shown = set(re.findall(r'tenant="([a-z]+)"', text))
        if caller == ADMIN:
            assert shown == set(TENANTS) and "skillstate_requests_total" in text
        else:
            assert shown == {caller} and "skillstate_requests_total" not in text
            assert "skillstate_upstream_circuit" not in text and not leaks(case, text)
