"""The gateway and upstream checks, against real loopback servers and closed ports."""

from __future__ import annotations

import socket
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace
from pathlib import Path

from aiohttp import web

from skillstate import __version__
from skillstate.cli.client import gateway_url
from skillstate.cli.doctor import Surroundings, examine
from skillstate.cli.doctor.network import (
    UpstreamFacts,
    check_gateway,
    check_upstream,
    check_upstreams,
)
from skillstate.config import Settings, load_settings
from skillstate.testing import ScriptedUpstream
from skillstate.testing.gateway import gateway_for

TOKEN = "doctor-test-token-0123456789"
QUIET = Surroundings(
    environ={"PATH": ""},
    integrations={},
    shell_hook=lambda: (False, "not installed"),
    clis=(),
)
KEY = "sk-test-0123456789abcdefwxyz"


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


def settings(tmp_path: Path, **values: object) -> Settings:
    """Settings as flags give them; the gateway looked for is on a closed port unless
    ``port`` says otherwise (never one another process on this machine happens to run)."""
    cli = {"data_dir": str(tmp_path / "data"), "port": closed_port(), **values}
    return load_settings(cli=cli, environ={"HOME": str(tmp_path), "DOCTOR_KEY": KEY})


def port_of(url: str) -> int:
    return int(url.rsplit(":", 1)[1])


@asynccontextmanager
async def server(handler: web.Handler) -> AsyncIterator[tuple[str, list[web.Request]]]:
    """A loopback HTTP server answering every route with ``handler``; yields its URL and the
    requests it saw."""
    seen: list[web.Request] = []

    async def record(request: web.Request) -> web.StreamResponse:
        seen.append(request)
        return await handler(request)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", record)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = runner.addresses[0][1]
    try:
        yield f"http://127.0.0.1:{port}", seen
    finally:
        await runner.cleanup()


async def test_a_running_gateway_and_its_version(tmp_path: Path) -> None:
    async with gateway_for(None) as gw:
        check = await check_gateway(settings(tmp_path, port=port_of(gw.url)))
    assert check.ok is True
    assert check.detail == f"{gw.url} runs skillstate {__version__}"


async def test_nothing_listening_is_a_problem_with_the_serve_command(tmp_path: Path) -> None:
    port = closed_port()
    check = await check_gateway(settings(tmp_path, port=port))
    assert check.ok is False
    assert f"nothing answers on http://127.0.0.1:{port}" in check.detail
    assert check.fix == f"skillstate serve --port {port}"


async def test_a_gateway_with_a_token_is_asked_with_it(tmp_path: Path) -> None:
    async with gateway_for(None, settings={"auth_token": TOKEN}) as gw:
        port = port_of(gw.url)
        asked = await check_gateway(settings(tmp_path, port=port, auth_token=TOKEN))
        without = await check_gateway(settings(tmp_path, port=port))
    assert asked.ok is True
    assert without.ok is False and "refuses our token (HTTP 401)" in without.detail
    assert without.fix is not None and "SKILLSTATE_AUTH_TOKEN" in without.fix


async def test_another_version_wants_a_restart(tmp_path: Path) -> None:
    async def old(request: web.Request) -> web.Response:
        return web.json_response({"name": "skillstate", "version": "0.0.1"})

    async with server(old) as (url, _):
        check = await check_gateway(settings(tmp_path, port=port_of(url)))
    assert check.ok is False
    assert f"runs skillstate 0.0.1; {__version__} is installed" in check.detail
    assert check.fix is not None and check.fix.startswith("restart the gateway: skillstate serve")


async def test_something_else_on_the_port(tmp_path: Path) -> None:
    async def other(request: web.Request) -> web.Response:
        return web.Response(text="<html>hello</html>")

    async with server(other) as (url, _):
        check = await check_gateway(settings(tmp_path, port=port_of(url)))
    assert check.ok is False and "is not a skillstate gateway" in check.detail


def test_a_wildcard_address_is_reached_on_loopback(tmp_path: Path) -> None:
    wildcard = settings(tmp_path, host="::", port=9000, auth_token=TOKEN)
    assert gateway_url(wildcard) == "http://[::1]:9000"


async def test_a_reachable_upstream(tmp_path: Path) -> None:
    async with ScriptedUpstream() as up:
        (check,) = await check_upstreams(settings(tmp_path, upstream=up.url))
    assert check.ok is True and check.name == "upstream default"
    assert "the client's own key is forwarded" in check.detail


async def test_any_http_answer_counts_and_no_credential_is_sent(tmp_path: Path) -> None:
    async def refuse(request: web.Request) -> web.Response:
        return web.Response(status=401)

    async with server(refuse) as (url, seen):
        table = [{"name": "mine", "base_url": url, "api_key_env": "DOCTOR_KEY"}]
        (check,) = await check_upstreams(settings(tmp_path, upstreams=table))
    assert check.ok is True and check.name == "upstream mine"
    assert "HTTP 401" in check.detail and "key from DOCTOR_KEY" in check.detail
    (request,) = seen
    assert not {"authorization", "x-api-key"} & {name.lower() for name in request.headers}
    assert KEY not in str(dict(request.headers))


async def test_each_upstream_line_names_its_profile(tmp_path: Path) -> None:
    async with ScriptedUpstream() as up:
        (detected,) = await check_upstreams(settings(tmp_path, upstream=up.url))
        table = [{"name": "mine", "base_url": up.url, "profile": "openai"}]
        (declared,) = await check_upstreams(settings(tmp_path, upstreams=table))
    own = "; from this command's settings (no gateway answers on http://127.0.0.1:"
    assert "; profile compatible (detected), first-byte timeouts not retried" + own in (
        detected.detail
    )
    assert "; profile openai (set)" + own in declared.detail
    url = f"http://127.0.0.1:{closed_port()}"
    (unreachable,) = await check_upstreams(settings(tmp_path, upstream=url))
    assert "profile compatible (detected)" in unreachable.detail


async def test_an_unreachable_upstream(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    (check,) = await check_upstreams(settings(tmp_path, upstream=url))
    assert check.ok is False and "is unreachable" in check.detail
    assert check.fix == f"check the network, or the base URL: curl -sI {url}"


async def test_no_upstream_is_a_problem(tmp_path: Path) -> None:
    (check,) = await check_upstreams(settings(tmp_path))
    assert check.ok is False
    assert check.detail.startswith("no upstream is configured in this command's settings")
    assert check.fix is not None and "--upstream" in check.fix


async def test_the_circuits_line_reads_the_gateways_health(tmp_path: Path) -> None:
    from skillstate.cli.doctor.network import check_circuits, circuits_check

    async with ScriptedUpstream() as up, gateway_for(up.url) as gw:
        check = await check_circuits(settings(tmp_path, port=port_of(gw.url)))
    assert check.name == "circuits" and check.ok is True
    assert check.detail == "default closed (0/0 failed)"
    window = {"calls": 20, "failed": 15, "retry_in_s": 12.0}
    opened = circuits_check([{"name": "a", "circuit": "open", "circuit_window": window}])
    assert opened.ok is False and opened.detail == "a open (15/20 failed, trials in 12.0s)"
    assert opened.fix is not None and "add fallbacks" in opened.fix
    nobody = await check_circuits(settings(tmp_path, port=closed_port()))
    assert nobody.ok is None and "no gateway" in nobody.detail


async def test_the_running_gateways_upstreams_are_checked(tmp_path: Path) -> None:
    """Run as the README says (a gateway started with --upstream URL, then doctor without the
    flag): doctor reports that gateway's upstream, not its own lack of one."""
    async with ScriptedUpstream() as up, gateway_for(up.url) as gw:
        port = port_of(gw.url)
        (check,) = await check_upstreams(settings(tmp_path, port=port))
        checks = await examine(settings(tmp_path, port=port), QUIET)
    assert check.ok is True and check.name == "upstream default"
    assert check.detail.startswith(f"{up.url} answers (HTTP ")
    assert "profile openai (set)" in check.detail and "circuit closed" in check.detail
    assert check.detail.endswith(f"; from the running gateway at {gw.url}")
    upstream_checks = [c for c in checks if c.name.startswith("upstream")]
    assert [c.ok for c in upstream_checks] == [True]


async def test_the_running_gateway_is_asked_with_the_token(tmp_path: Path) -> None:
    async with (
        ScriptedUpstream() as up,
        gateway_for(up.url, settings={"auth_token": TOKEN}) as gw,
    ):
        port = port_of(gw.url)
        (asked,) = await check_upstreams(settings(tmp_path, port=port, auth_token=TOKEN))
        (refused,) = await check_upstreams(settings(tmp_path, port=port))
    assert asked.ok is True and f"from the running gateway at {gw.url}" in asked.detail
    # Refused our token: the gateway's configuration is not ours to read; our own settings
    # (none here) are checked, saying why.
    assert refused.ok is False
    assert f"this command's settings (the gateway on {gw.url} refuses our token)" in refused.detail


async def test_an_upstream_whose_circuit_is_open_is_a_problem() -> None:
    """Reachable from here, but the running gateway stopped calling it."""
    async with ScriptedUpstream() as up:
        facts = UpstreamFacts("a", up.url, "auto", "openai", True, True, "key from K", "open")
        check = await check_upstream(facts)
        closed = await check_upstream(replace(facts, circuit="closed"))
    assert check.ok is False and "circuit open" in check.detail
    assert check.fix is not None and "add fallbacks" in check.fix
    assert closed.ok is True


async def test_something_else_on_the_port_leaves_our_own_settings(tmp_path: Path) -> None:
    async def other(request: web.Request) -> web.Response:
        return web.json_response({"name": "not-skillstate"})

    async with server(other) as (url, _), ScriptedUpstream() as up:
        (check,) = await check_upstreams(settings(tmp_path, port=port_of(url), upstream=up.url))
    assert check.ok is True and check.name == "upstream default"
    assert check.detail.endswith(
        f"; from this command's settings ({url} does not tell its configuration (HTTP 200))"
    )
