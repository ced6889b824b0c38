"""Which login each agent host uses, and what the gateway does with it: one information line
per host (``login HOST``). Claude Code's is told by ``integrations.claude.login``; a
subscription login passes through untouched unless ``subscription_rewrite`` (docs/integrations.md,
"A subscription login")."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from skillstate.cli.doctor.check import Check
from skillstate.config import Settings
from skillstate.protocols.logins import Login


def check_claude_login(settings: Settings, environ: Mapping[str, str] | None = None) -> Check:
    """Claude Code's login (from the shell's environment, its settings and its credentials
    file) and what the gateway ``settings`` describe does with it; information, never a
    failure."""
    from skillstate.integrations.claude import login
    from skillstate.integrations.model import Locations

    env = dict(os.environ if environ is None else environ)
    home = Path(env.get("HOME") or Path.home())
    found = login(Locations(env=env, home=home))
    return Check("login claude", None, f"{found.describe()}: {treatment(found.kind, settings)}")


def treatment(login: Login, settings: Settings) -> str:
    """What the gateway does with a request that carries ``login``."""
    held = any(upstream.api_key is not None for upstream in settings.resolved_upstreams())
    mode = settings.mode.value
    if login is Login.ANTHROPIC_SUBSCRIPTION:
        if settings.subscription_rewrite:
            return (
                f"rewritten (mode {mode}) because subscription_rewrite = true: against "
                "Anthropic's terms for that login, at your account's risk (docs/integrations.md)"
            )
        return (
            "passed through untouched (subscription): Anthropic allows that login for Claude "
            "Code only, so no lane touches it and nothing is saved; for the savings use an API "
            "key (ANTHROPIC_API_KEY), or SKILLSTATE_API_KEY on the gateway with a placeholder "
            "ANTHROPIC_API_KEY in Claude Code"
        )
    if login is Login.NONE and not held:
        return "the gateway holds no key either: Claude Code will ask you to log in"
    key = "the gateway's key (SKILLSTATE_API_KEY) in its place" if held else "forwarded"
    return f"{key}, rewritten as mode {mode} says"
