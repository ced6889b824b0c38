"""A gateway on a free loopback port, for tests, the demo and benchmarks."""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import AsyncIterator, Mapping
from typing import Any

from skillstate.config import load_settings
from skillstate.gateway import RunningGateway, running


@contextlib.asynccontextmanager
async def gateway_for(
    upstream: str | None = None,
    *,
    wire: str = "auto",
    profile: str = "openai",
    settings: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    config_path: str | None = None,
) -> AsyncIterator[RunningGateway]:
    """``async with gateway_for(up.url, wire="anthropic-messages") as gw:`` — a gateway in front
    of ``upstream`` (in ``wire``, or the client's own with "auto"). ``settings`` are more
    values as CLI flags would give them; the process environment is not read unless passed.
    Retries are off unless ``settings`` asks for them, so a scripted failure reaches the test
    as scripted.

    ``profile`` is the upstream's (``upstream_profile``, and the ``profile`` of each table in
    ``settings["upstreams"]`` that names none): ``openai`` by default, since the scripted
    upstream on 127.0.0.1 imitates the official providers exactly, where detection would say
    ``compatible``; a test of what the gateway does for a generic server asks for that. The
    tables of a config file are read as written."""
    cli: dict[str, Any] = dict(settings or {})
    cli.setdefault("retries", 0)
    if upstream is not None:
        cli.setdefault("upstream", upstream)
        cli.setdefault("upstream_wire", wire)
        cli.setdefault("upstream_profile", profile)
    tables = cli.get("upstreams")
    if isinstance(tables, list | tuple):
        cli["upstreams"] = [
            {"profile": profile, **table} if isinstance(table, Mapping) else table
            for table in tables
        ]
    with tempfile.TemporaryDirectory(prefix="skillstate-test-") as scratch:
        env = dict(environ or {})
        if "data_dir" not in cli and "SKILLSTATE_DATA_DIR" not in env:
            cli["data_dir"] = scratch  # never the user's own data directory
        loaded = load_settings(cli=cli, environ=env, config_path=config_path)
        async with running(loaded, port=0) as gateway:
            yield gateway
