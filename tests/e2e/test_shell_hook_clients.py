"""Issue 13, "Done when": the real Codex and Claude Code CLIs run a task with the shell hook
installed by ``skillstate integrate HOST --install --shell`` (the real command, over a HOME
holding the user's own config). The model calls the host's shell tool with ``ls -R pkg``; the
host asks the hook, which rewrites the call to ``skillstate shell -- ls -R pkg``; the model
reads the reduced listing under its header, and the archive gives back the exact output.
Codex runs the hook only because the install recorded its trust (no bypass flag here)."""

from __future__ import annotations

import asyncio
import dataclasses
import subprocess
from functools import partial
from pathlib import Path

import pytest
from e2e_support import Trip, round_trip
from test_integrate_sessions import (
    CODEX_CONFIG,
    Host,
    assert_restored,
    assert_verified,
    claude_host,
    codex_host,
    installed,
)

from skillstate.archive import Archive
from skillstate.config import load_settings
from skillstate.integrations.shell.run import exact
from skillstate.storage import open_stores
from skillstate.testing.agents import AgentPolicy

pytestmark = pytest.mark.e2e

COMMAND = "ls -R pkg"
HEADER = "[skillstate: output reduced on purpose"


def with_tree(host: Host) -> Host:
    """The host with ``--shell`` and a project tree whose listing is worth reducing. Codex
    runs in its workspace-write sandbox, where the data directory is writable only as the
    install made it (a writable root); elsewhere the archive could not be written."""
    for part in range(12):
        folder = host.work / "pkg" / f"part_{part:02d}"
        folder.mkdir(parents=True)
        for module in range(20):
            (folder / f"module_{module:02d}.py").write_text("")
    argv = host.argv
    if host.name == "codex":
        argv = [*argv[:-1], "--sandbox", "workspace-write", argv[-1]]
    return dataclasses.replace(host, argv=argv, options=(*host.options, "--shell"))


async def hook_trip(host: Host) -> Trip:
    policy = AgentPolicy(command=COMMAND)
    return await round_trip(installed(host), mode="hybrid", policy=policy)


def archived_ref(trip: Trip) -> str:
    """The task finished with one shell call, which the model made as ``ls -R pkg`` and whose
    result came back reduced, headed by the archive ref."""
    report = trip.report()
    assert trip.cli.returncode == 0, report
    assert trip.policy.final_text in trip.cli.stdout, report
    [call] = trip.policy.calls
    assert COMMAND in call.arguments and "skillstate" not in call.arguments, report
    [output] = [out for out in trip.policy.outputs if out.call_id == call.id]
    assert HEADER in output.text, report
    assert "part_00" in output.text and "module_19.py" not in output.text, report
    return next(word for word in output.text.split() if word.startswith("ar_"))


async def assert_exact(host: Host, ref: str) -> None:
    """The archive, in the data directory the host's environment names, holds the command's
    exact output and exit code."""
    data_dir = Path(load_settings(environ=host.env).data_dir)
    stores = await open_stores(data_dir)
    try:
        messages = await Archive(stores.archive).span(ref)
    finally:
        await stores.close()
    assert messages is not None
    argv, outcome = exact(messages)
    run = partial(subprocess.run, COMMAND.split(), cwd=host.work, capture_output=True, check=True)
    listing = await asyncio.to_thread(run)
    assert argv == COMMAND.split()
    assert (outcome.stdout, outcome.code) == (listing.stdout, 0)


async def test_codex_runs_its_shell_calls_through_the_hook(codex: Path, tmp_path: Path) -> None:
    host = with_tree(codex_host(codex, tmp_path, CODEX_CONFIG))
    trip = await hook_trip(host)
    await assert_exact(host, archived_ref(trip))
    await asyncio.to_thread(assert_verified, host)
    await asyncio.to_thread(assert_restored, host)


async def test_claude_code_runs_its_shell_calls_through_the_hook(
    claude: Path, tmp_path: Path
) -> None:
    host = with_tree(claude_host(claude, tmp_path))
    trip = await hook_trip(host)
    await assert_exact(host, archived_ref(trip))
    await asyncio.to_thread(assert_verified, host)
