"""The commented config file ``skillstate config --init`` writes: every key at its default.

The values come from ``Settings``' own defaults and the notes from ``NOTES``, one per key, so
the file cannot fall behind the settings: a key without a note fails the tests. Keys without a
default (``upstream``, ``schema``) and secrets (``api_key``, ``auth_token``) are written as
comments; a secret belongs in the environment, never in a file that backups carry along.
Loading the written file gives back the defaults, key for key.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from dataclasses import asdict
from enum import Enum
from pathlib import Path

from skillstate.config.loader import load_settings
from skillstate.config.settings import ATTRIBUTES, KEYS, Settings
from skillstate.config.sources import (
    CONFIG_VARIABLE,
    default_config_file,
    home_directory,
)
from skillstate.support import jsonio
from skillstate.support.files import resolve_path

NOTES: dict[str, str] = {
    "host": "Address to listen on; off loopback, auth_token is required.",
    "port": "Port to listen on.",
    "upstream": "One provider's base URL, with or without /v1 (or [[upstreams]] tables).",
    "upstream_wire": "auto (the client's own), openai-chat, openai-responses, anthropic-messages.",
    "upstream_profile": "auto (from the base URL), openai or compatible (docs/upstreams.md).",
    "api_key": "The upstream shortcut's key: set SKILLSTATE_API_KEY, never here.",
    "upstreams": "Several providers, the first whose models match serves a request.",
    "chatgpt_base_url": "Where Codex's ChatGPT-login requests go (docs/integrations.md).",
    "mode": "State mode: paper, hybrid or off.",
    "subscription_rewrite": "Rewrite Claude Code subscription traffic too (against its terms).",
    "schema": (
        "The state's top-level keys, each with its patch rule after a colon where it names "
        "one (replace, append, union, sum, max, set_once); not set: the default agent schema."
    ),
    "initial_state": "The state each new session starts from (a table of JSON values).",
    "collapse": "The collapse lane's options (docs/state.md).",
    "lanes": "Each lane's switch and options (docs/lanes.md).",
    "prices": "Corrections and additions to the price catalog, USD per million tokens.",
    "data_dir": "Where sessions, the archive and the ledger are kept (owner-only).",
    "store": (
        "Σ, the archive and the ledger: empty for SQLite under data_dir, or a postgresql:// URL."
    ),
    "redis": "A Redis the gateways share (redis://...): rate limits across all of them.",
    "verbose": "Log one line per request.",
    "max_body_bytes": "Largest request body (else 413).",
    "max_messages": "Most messages in one request (else 400).",
    "max_parts": "Most content parts in one request (else 400).",
    "max_header_line_bytes": "Longest request line, header name or value (else 431).",
    "max_headers": "Most headers in one request (else 431).",
    "max_state_bytes": "The state's size as compact JSON, at most 1 MiB.",
    "max_patch_bytes": "One state patch's size, at most max_state_bytes.",
    "upstream_timeout": "Seconds one upstream exchange may take in all.",
    "connect_timeout": "Seconds to connect to an upstream.",
    "first_byte_timeout": "Seconds to wait for an upstream's first byte.",
    "stream_idle_timeout": "Seconds a stream may pause between bytes.",
    "retries": "Tries after the first, 0 to 10 (docs/resilience.md).",
    "retry_max_wait": "Longest wait between tries, in seconds.",
    "retry_deadline": "Seconds from an upstream call's first try after which none starts.",
    "circuit_failure_rate": "Share of failed calls in the window that opens a circuit.",
    "circuit_reroute_rate": "Share of failed tries that sends calls to a healthy fallback.",
    "circuit_min_requests": "Fewest calls in the window before a circuit may open.",
    "circuit_window_seconds": "The window a circuit judges an upstream over, in seconds.",
    "circuit_open_seconds": "Seconds an open circuit reroutes before its trial calls.",
    "circuit_trials": "Trial calls of a half-open circuit; that many successes close it.",
    "shutdown_timeout": "Seconds to finish requests in flight on shutdown.",
    "ledger_retention_days": "Days the cost ledger keeps its rows.",
    "archive_ttl_days": "Days an unused archive span is kept.",
    "archive_max_mb": "MiB of archive blobs kept; past it the least recently used go.",
    "budget_fallback_input_price": "USD a million input tokens of an unpriced model (budgets).",
    "budget_fallback_output_price": "USD a million output tokens of an unpriced model (budgets).",
    "budget_output_tokens": "Output tokens a key's budget holds for a request that sets no limit.",
    "tenant_api_keys": "TENANT[@UPSTREAM]=VAR: a tenant's own provider key, from the variable.",
    "auth_token": "The gateway's own token: set SKILLSTATE_AUTH_TOKEN, never here.",
    "allowed_hosts": "Host names served besides loopback and the bound address (*: any).",
    "allowed_origins": "Browser origins served besides the gateway's own (*: any).",
    "header_timeout": "Seconds to send a request head; a kept-alive connection's idle limit.",
    "body_timeout": "Seconds to send a request body (else 408).",
    "max_connections": "Connections held at once; the next gets 503.",
    "workers": "Processes serving the port together, each restarted if it dies.",
    "data_key_file": "Seal Σ and the archive at rest with the first key of this 0600 file.",
    "data_key": "Or the data key itself: set SKILLSTATE_DATA_KEY, never here.",
    "otel_endpoint": "OpenTelemetry OTLP/HTTP endpoint for traces and metrics (empty: OTEL_*).",
}
"""What each key does, in one line: the comment above it in the written file."""

_COMMENTED: dict[str, str] = {
    "upstream": 'upstream = "https://api.openai.com/v1"',
    "api_key": "# api_key = ...",
    "schema": 'schema = ["step", "notes", "findings"]',
    "auth_token": "# auth_token = ...",
    "data_key_file": '# data_key_file = "~/.config/skillstate/data.key"',
    "data_key": "# data_key = ...",
}
"""Keys without a default, written as a commented example."""

_UPSTREAMS_EXAMPLE = """\
# [[upstreams]]
# name = "openai"
# base_url = "https://api.openai.com/v1"
# api_key_env = "OPENAI_API_KEY"      # the key itself stays in the environment
# models = ["gpt-*", "o*"]
# profile = "auto"                    # or "openai", "compatible" (docs/upstreams.md)
#
# [[upstreams]]
# name = "local"                      # llama.cpp, vLLM, Ollama, LM Studio...
# base_url = "http://127.0.0.1:8080/v1"
# wire = "openai-chat"
# retry_first_byte_timeout = false    # the default on a compatible upstream"""

_PRICES_EXAMPLE = """\
# [prices."gpt-4.1"]
# input = 2.00
# output = 8.00"""

_HEADER = """\
# skillstate's configuration: every key at its default (skillstate config --init).
# Precedence: defaults < this file < SKILLSTATE_<KEY> environment < command-line flags.
# Read from ~/.config/skillstate/config.toml ($XDG_CONFIG_HOME) when it is there, or from
# `skillstate --config FILE` / SKILLSTATE_CONFIG=FILE; check with `skillstate config`.
"""


def render_template(defaults: Settings) -> str:
    """The config file's text for ``defaults`` (settings loaded from no source)."""
    lines = [_HEADER]
    tables: list[str] = []
    for key in KEYS:
        if key in ("collapse", "lanes", "upstreams", "prices"):
            tables.extend(["", f"# {key}: {NOTES[key]}", *_table(key, defaults)])
            continue
        lines.append(f"# {NOTES[key]}")
        lines.append(_line(key, getattr(defaults, ATTRIBUTES[key])))
    return "\n".join([*lines, *tables]) + "\n"


def _line(key: str, value: object) -> str:
    if key in _COMMENTED:
        example = _COMMENTED[key]
        return example if example.startswith("#") else f"# {example}"
    if key == "data_dir":
        return f"# data_dir = {_toml(str(value))}"
    return f"{key} = {_toml(value)}"


def _table(key: str, defaults: Settings) -> Iterator[str]:
    if key == "upstreams":
        yield _UPSTREAMS_EXAMPLE
    elif key == "prices":
        yield _PRICES_EXAMPLE
    elif key == "collapse":
        yield "[collapse]"
        yield from _pairs(asdict(defaults.collapse))
    else:
        for lane, options in defaults.lanes.as_json().items():
            yield f"[lanes.{lane}]"
            yield from _pairs(options)


def _pairs(table: Mapping[str, object]) -> Iterator[str]:
    for name, value in table.items():
        yield f"{name} = {_toml(value)}"


def _toml(value: object) -> str:
    """A TOML value for the scalars, lists and tables the defaults hold. JSON's string escapes
    are TOML's basic-string escapes (toml.io, "String"), so strings are written as JSON."""
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float | str):
        return jsonio.dumps_str(value)
    if isinstance(value, list | tuple | frozenset):
        return "[" + ", ".join(_toml(item) for item in value) + "]"
    if isinstance(value, Mapping):
        pairs = ", ".join(f"{jsonio.dumps_str(k)} = {_toml(v)}" for k, v in value.items())
        return "{" + pairs + "}" if pairs else "{}"
    raise TypeError(f"no TOML form for {type(value).__name__}")


def default_settings(environ: Mapping[str, str] | None = None) -> Settings:
    """Settings from no source: only ``HOME`` and ``XDG_DATA_HOME`` are read, for the data
    directory's default."""
    env = os.environ if environ is None else environ
    kept = {name: env[name] for name in ("HOME", "XDG_DATA_HOME") if name in env}
    return load_settings(environ=kept)


def write_template(path: Path, defaults: Settings) -> None:
    """Write the template to ``path``, owner-only (0600), its folder made if missing.

    Raises ``FileExistsError`` when ``path`` exists: an edited config is never overwritten.
    """
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(handle, "w", encoding="utf-8") as file:
        file.write(render_template(defaults))


def template_path(given: str | None, environ: Mapping[str, str] | None = None) -> Path:
    """Where ``--init`` writes: ``given``, else ``$SKILLSTATE_CONFIG``, else
    ``$XDG_CONFIG_HOME/skillstate/config.toml`` (``~/.config/skillstate/config.toml``)."""
    env = os.environ if environ is None else environ
    home = home_directory(env)
    text = given or env.get(CONFIG_VARIABLE)
    if text:
        return resolve_path(text, Path.cwd(), home)
    return default_config_file(env)
