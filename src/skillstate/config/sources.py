"""Where raw values come from: the config file, the environment and the command line.

Each reader returns a ``Layer``: for every key it found, the value (parsed where the source
is text), the value exactly as written (for error messages) and the source's name. Readers do
not stop at the first problem; they append each one to ``reading.problems`` so that one run reports
them all.
"""

from __future__ import annotations

import os
import re
import tomllib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from skillstate.config.messages import unknown_key, value_problem
from skillstate.config.settings import KEYS
from skillstate.pipeline.switches import parse_choice
from skillstate.support import jsonio
from skillstate.support.files import resolve_path

ENV_PREFIX = "SKILLSTATE_"
CONFIG_VARIABLE = "SKILLSTATE_CONFIG"
"""Names the config file; it is not itself a key, so it cannot appear in the file."""


@dataclass(frozen=True, slots=True)
class Entry:
    value: object
    raw: object
    source: str


Layer = dict[str, Entry]


@dataclass(slots=True)
class Reading:
    """One load's context: what ``~`` and ``.`` mean, and the problems found so far.

    Relative paths in a config file are relative to the file's folder; elsewhere to ``cwd``.
    """

    home: Path
    cwd: Path
    problems: list[str] = field(default_factory=list)


def home_directory(environ: Mapping[str, str]) -> Path:
    home = environ.get("HOME")
    return Path(home) if home else Path.home()


def default_config_file(environ: Mapping[str, str]) -> Path:
    """``$XDG_CONFIG_HOME/skillstate/config.toml``, else ``~/.config/skillstate/config.toml``
    (a relative ``XDG_CONFIG_HOME`` is ignored, as the XDG spec says)."""
    xdg = environ.get("XDG_CONFIG_HOME", "")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else home_directory(environ) / ".config"
    return base / "skillstate" / "config.toml"


def default_data_dir(environ: Mapping[str, str]) -> Path:
    """``$XDG_DATA_HOME/skillstate``, else ``~/.local/share/skillstate``.

    The XDG Base Directory spec says a relative ``XDG_DATA_HOME`` is invalid and is ignored.
    """
    xdg = environ.get("XDG_DATA_HOME", "")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "skillstate"
    return home_directory(environ) / ".local" / "share" / "skillstate"


def read_file(path: Path, reading: Reading) -> Layer:
    """The keys of a TOML config file; its values keep their TOML types."""
    source = f"config file {path}"
    try:
        with path.open("rb") as handle:
            document = tomllib.load(handle)
    except FileNotFoundError:
        reading.problems.append(f"{source} does not exist")
        return {}
    except tomllib.TOMLDecodeError as exc:
        reading.problems.append(f"{source} is not valid TOML: {exc}")
        return {}
    except OSError as exc:
        reading.problems.append(f"{source} cannot be read: {exc.strerror or exc}")
        return {}
    layer: Layer = {}
    for key, value in document.items():
        if key not in KEYS:
            reading.problems.append(unknown_key(key, source, KEYS))
            continue
        entry = _entry(key, value, value, source, path.parent, reading)
        if entry is not None:
            layer[key] = entry
    return layer


def read_environment(environ: Mapping[str, str], reading: Reading) -> tuple[Layer, list[str]]:
    """``SKILLSTATE_<KEY>`` variables, parsed from text; also the unknown ``SKILLSTATE_*`` names.

    Unknown names are returned rather than reported because an upstream's ``api_key_env`` may
    name a ``SKILLSTATE_*`` variable of its own choosing; the loader knows which ones.
    """
    layer: Layer = {}
    unknown: list[str] = []
    for name in sorted(environ):
        if not name.startswith(ENV_PREFIX) or name == CONFIG_VARIABLE:
            continue
        key = name.removeprefix(ENV_PREFIX).lower()
        if key not in KEYS or name != ENV_PREFIX + key.upper():
            unknown.append(name)
            continue
        entry = _from_text(key, environ[name], f"environment {name}", reading)
        if entry is not None:
            layer[key] = entry
    return layer, unknown


def read_command_line(cli: Mapping[str, object], reading: Reading) -> Layer:
    """Flags by key; a flag left out is ``None``. Text values are parsed as in the environment."""
    layer: Layer = {}
    for key, value in cli.items():
        if value is None:
            continue
        source = f"command line --{key.replace('_', '-')}"
        if key not in KEYS:
            reading.problems.append(unknown_key(key, "command line", KEYS))
            continue
        if isinstance(value, str):
            entry = _from_text(key, value, source, reading)
        else:
            entry = _entry(key, value, value, source, reading.cwd, reading)
        if entry is not None:
            layer[key] = entry
    return layer


def _from_text(key: str, text: str, source: str, reading: Reading) -> Entry | None:
    if not text.strip():
        reading.problems.append(
            value_problem(key, text, source, "is empty; leave it out for the default")
        )
        return None
    parse = TEXT_PARSERS.get(key)
    try:
        value = text if parse is None else parse(text)
    except ValueError as exc:
        reading.problems.append(value_problem(key, text, source, str(exc)))
        return None
    return _entry(key, value, text, source, reading.cwd, reading)


def _entry(
    key: str,
    value: object,
    raw: object,
    source: str,
    base: Path,
    reading: Reading,
) -> Entry | None:
    if key in ("data_dir", "data_key_file") and isinstance(value, str | os.PathLike):
        try:
            value = resolve_path(os.fspath(value), base, reading.home)
        except ValueError as exc:
            reading.problems.append(value_problem(key, raw, source, str(exc)))
            return None
    return Entry(value, raw, source)


_INTEGER = re.compile(r"[+-]?[0-9]+\Z")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_TRUE = frozenset({"1", "true", "yes"})
_FALSE = frozenset({"0", "false", "no"})


def parse_int(text: str) -> int:
    if not _INTEGER.match(text.strip()):
        raise ValueError("not an integer")
    return int(text)


def parse_float(text: str) -> float:
    if not _DECIMAL.match(text.strip()):
        raise ValueError("not a number")
    return float(text)


def parse_bool(text: str) -> bool:
    word = text.strip().lower()
    if word in _TRUE:
        return True
    if word in _FALSE:
        return False
    raise ValueError("not a boolean (use 1/0, true/false or yes/no)")


def parse_list(text: str) -> list[str]:
    """A comma list: ``step,notes,findings``; spaces around items are ignored."""
    items = [item.strip() for item in text.split(",")]
    if not all(items):
        raise ValueError("has an empty item (separate the items with single commas)")
    return items


def parse_json_object(text: str) -> object:
    value = _parse_json(text)
    if not isinstance(value, dict):
        raise ValueError("not a JSON object")
    return value


def parse_lanes(text: str) -> object:
    """Lane tables as JSON, or the lanes to run as names: ``compaction,state``."""
    choice = parse_choice(text)
    return parse_json_object(text) if choice is None else choice


def parse_json_array(text: str) -> object:
    value = _parse_json(text)
    if not isinstance(value, list):
        raise ValueError("not a JSON array")
    return value


def _parse_json(text: str) -> object:
    try:
        return jsonio.loads(text)
    except ValueError as exc:
        raise ValueError(f"not valid JSON ({exc})") from None


TEXT_PARSERS: dict[str, Callable[[str], object]] = {
    "port": parse_int,
    "max_body_bytes": parse_int,
    "max_messages": parse_int,
    "max_parts": parse_int,
    "max_header_line_bytes": parse_int,
    "max_headers": parse_int,
    "max_state_bytes": parse_int,
    "max_patch_bytes": parse_int,
    "upstream_timeout": parse_float,
    "connect_timeout": parse_float,
    "first_byte_timeout": parse_float,
    "stream_idle_timeout": parse_float,
    "retries": parse_int,
    "retry_max_wait": parse_float,
    "retry_deadline": parse_float,
    "circuit_failure_rate": parse_float,
    "circuit_reroute_rate": parse_float,
    "circuit_min_requests": parse_int,
    "circuit_window_seconds": parse_float,
    "circuit_open_seconds": parse_float,
    "circuit_trials": parse_int,
    "shutdown_timeout": parse_float,
    "ledger_retention_days": parse_float,
    "archive_ttl_days": parse_float,
    "archive_max_mb": parse_int,
    "budget_fallback_input_price": parse_float,
    "budget_fallback_output_price": parse_float,
    "budget_output_tokens": parse_int,
    "tenant_api_keys": parse_list,
    "header_timeout": parse_float,
    "body_timeout": parse_float,
    "max_connections": parse_int,
    "workers": parse_int,
    "allowed_hosts": parse_list,
    "allowed_origins": parse_list,
    "verbose": parse_bool,
    "subscription_rewrite": parse_bool,
    "schema": parse_list,
    "initial_state": parse_json_object,
    "collapse": parse_json_object,
    "lanes": parse_lanes,
    "prices": parse_json_object,
    "upstreams": parse_json_array,
}
"""How text from the environment or a flag becomes a typed value; other keys stay text."""
