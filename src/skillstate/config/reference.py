"""The configuration reference: docs/configuration.md, rendered from the typed settings.

Every key of ``Settings`` gets one row: its default (from the model's own defaults, loaded
from no source), its environment variable (``SKILLSTATE_<KEY>``) and how that text is read,
its command-line flag when it has one, and what it does (``template.NOTES``, the notes
``skillstate config --init`` writes above each key). The tables (``collapse``, ``lanes``,
``upstreams``) list their options the same way. The page is a pure function of the settings
and the flags, so a test can compare the committed page with a fresh rendering: it cannot
fall behind a new key or a changed default.

The flags live in the command line's package, above this one; its caller passes them in
(``cli.reference``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict

from skillstate.config.settings import ATTRIBUTES, KEYS, Settings
from skillstate.config.sources import CONFIG_VARIABLE, ENV_PREFIX, TEXT_PARSERS
from skillstate.config.sources import parse_bool as _bool
from skillstate.config.sources import parse_float as _float
from skillstate.config.sources import parse_int as _int
from skillstate.config.sources import parse_json_array as _array
from skillstate.config.sources import parse_json_object as _object
from skillstate.config.sources import parse_lanes as _lanes
from skillstate.config.sources import parse_list as _list
from skillstate.config.template import NOTES, _toml
from skillstate.config.upstream_settings import UpstreamSettings

UPSTREAM_NOTES: dict[str, str] = {
    "name": "The upstream's name, used by `fallbacks` and shown in logs, /cost and doctor.",
    "base_url": "The provider's base URL, with or without /v1.",
    "wire": "auto (the client's own), openai-chat, openai-responses or anthropic-messages.",
    "api_key_env": "The environment variable holding its key (the key stays there).",
    "models": "Model name patterns (shell globs) this upstream serves; the first match wins.",
    "headers": "Extra headers sent to it on every request.",
    "fallbacks": "Other upstreams, by name, that serve its requests when it is down.",
    "rpm": "Requests per minute sent to it at most.",
    "tpm": "Prompt tokens per minute sent to it at most (estimated from the body).",
    "profile": "auto (from the base URL), openai or compatible (upstreams.md).",
    "retry_first_byte_timeout": "Whether a call whose first byte came late is tried again; "
    "not set: on the openai profile only.",
}
"""What each field of an ``[[upstreams]]`` table does; ``api_key`` is never written in a file
(it is read from ``api_key_env``), so it has no row."""

_SECRET_FIELDS = frozenset({"api_key"})

_TEXT_FORMS: dict[Callable[[str], object], str] = {
    _int: "integer",
    _float: "number",
    _bool: "1/0, true/false, yes/no",
    _list: "comma list",
    _object: "JSON object",
    _array: "JSON array of tables",
    _lanes: "lane names (comma list, `none`) or a JSON object",
}
"""How the environment's text is read for a key, by the parser ``sources`` uses for it."""

_DEFAULTS: dict[str, str] = {
    "upstream": "not set",
    "api_key": "not set (environment only)",
    "auth_token": "not set (environment only)",
    "data_key_file": "not set: nothing is sealed",
    "data_key": "not set (environment only)",
    "schema": "not set: the default agent schema",
    "upstreams": "none",
    "prices": "none: the shipped catalog",
    "collapse": "[table below](#collapse)",
    "lanes": "[tables below](#lanes)",
    "data_dir": "`$XDG_DATA_HOME/skillstate`, else `~/.local/share/skillstate`",
}
"""Defaults that are not one value: unset keys, tables, and the data directory (from HOME)."""

_HEADER = f"""\
---
# The key table has five columns: the site gives it the width of the table of contents.
hide:
  - toc
---

# Configuration reference

<!-- Generated from src/skillstate/config/settings.py by `make docs` (python -m
skillstate.cli.reference); edit the settings or config/template.py's notes, not this page. -->

Every key can be set in four places; a later one wins:

1. its default (below);
2. the config file: TOML, read from `--config FILE`, else `${CONFIG_VARIABLE}`, else
   `~/.config/skillstate/config.toml` (`$XDG_CONFIG_HOME/skillstate/config.toml`) when it
   exists. `skillstate config --init` writes one with every key at its default, commented;
3. the environment: `{ENV_PREFIX}<KEY>` (the key in capitals), its text read as the column
   says;
4. the command line, for the keys that have a flag (given before or after the command name).

Every key is checked: an unknown key or a bad value is an error naming the key and where it
came from (with a "did you mean" for a near miss). `skillstate config` prints what is in force
and where each value came from; secrets are shown masked.
"""


def render_reference(defaults: Settings, flags: Mapping[str, str]) -> str:
    """The reference page for ``defaults`` (settings loaded from no source) and ``flags``
    (settings key -> its flag as the help shows it, e.g. ``-v, --verbose``)."""
    unknown = sorted(set(flags) - set(KEYS))
    if unknown:
        raise ValueError(f"flags for keys that are not settings: {', '.join(unknown)}")
    lines = [_HEADER, "## Keys", ""]
    lines.append("| key | default | environment | flag | what it does |")
    lines.append("| --- | --- | --- | --- | --- |")
    for key in KEYS:
        flag = f"`{flags[key]}`" if key in flags else ""
        lines.append(
            f"| `{key}` | {_default(key, defaults)} | {_environment(key)} | {flag} "
            f"| {_cell(NOTES[key])} |"
        )
    lines.extend(_collapse(defaults))
    lines.extend(_lane_tables(defaults))
    lines.extend(_upstreams())
    lines.extend(_prices())
    return "\n".join(lines) + "\n"


def _default(key: str, defaults: Settings) -> str:
    if key in _DEFAULTS:
        return _DEFAULTS[key]
    return f"`{_toml(getattr(defaults, ATTRIBUTES[key]))}`"


def _environment(key: str) -> str:
    parser = TEXT_PARSERS.get(key)
    form = "text" if parser is None else _TEXT_FORMS[parser]
    return f"`{ENV_PREFIX}{key.upper()}` ({form})"


def _cell(text: str) -> str:
    """Text for a table cell: a pipe would end the cell."""
    return text.replace("|", "\\|")


def _collapse(defaults: Settings) -> Iterator[str]:
    yield from (
        "",
        "## collapse",
        "",
        f"`[collapse]`: {NOTES['collapse']} A table given replaces the whole table of a "
        "source before it; the options it leaves out keep their defaults.",
        "",
        "| option | default |",
        "| --- | --- |",
    )
    for name, value in asdict(defaults.collapse).items():
        yield f"| `{name}` | `{_toml(value)}` |"


def _lane_tables(defaults: Settings) -> Iterator[str]:
    yield from (
        "",
        "## lanes",
        "",
        f"`[lanes.<lane>]`: {NOTES['lanes']} `--lanes` and `{ENV_PREFIX}LANES` also take "
        "the lanes to run by name (`--lanes state,compaction`; `none`: no lane).",
        "",
        "| lane | option | default |",
        "| --- | --- | --- |",
    )
    for lane, options in defaults.lanes.as_json().items():
        for name, value in options.items():
            yield f"| `{lane}` | `{name}` | `{_toml(value)}` |"


def _upstreams() -> Iterator[str]:
    yield from (
        "",
        "## upstreams",
        "",
        f"`[[upstreams]]`: {NOTES['upstreams']} Each table takes these fields "
        "([upstreams.md](upstreams.md), [resilience.md](resilience.md)):",
        "",
        "| field | default | what it does |",
        "| --- | --- | --- |",
    )
    for name, field in UpstreamSettings.model_fields.items():
        if name in _SECRET_FIELDS:
            continue
        default = "required" if field.is_required() else _upstream_default(name)
        yield f"| `{name}` | {default} | {_cell(UPSTREAM_NOTES[name])} |"


def _upstream_default(name: str) -> str:
    field = UpstreamSettings.model_fields[name]
    value = field.get_default(call_default_factory=True)
    return "not set" if value is None else f"`{_toml(value)}`"


def _prices() -> Iterator[str]:
    yield from (
        "",
        "## prices",
        "",
        f'`[prices."MODEL"]`: {NOTES["prices"]} See [prices.md](prices.md) for the rates a '
        "table may give and how cost is computed from them:",
        "",
        "```toml",
        '[prices."gpt-4.1"]',
        "input = 2.00",
        "output = 8.00",
        "```",
    )
