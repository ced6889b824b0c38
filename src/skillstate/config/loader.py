"""Building ``Settings`` from its sources, each value's origin recorded.

This package is the only reader of the process environment, and only inside
``load_settings``.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pydantic import ValidationError

from skillstate.config import values
from skillstate.config.errors import ConfigError
from skillstate.config.messages import (
    unknown_variable,
    validation_problems,
    value_problem,
)
from skillstate.config.settings import KEYS, Settings
from skillstate.config.sources import (
    CONFIG_VARIABLE,
    ENV_PREFIX,
    Entry,
    Layer,
    Reading,
    default_config_file,
    default_data_dir,
    home_directory,
    read_command_line,
    read_environment,
    read_file,
)
from skillstate.config.telemetry import telemetry_of
from skillstate.config.upstream_settings import UpstreamSettings
from skillstate.pipeline.switches import LaneChoice, with_only
from skillstate.support.files import resolve_path

_TABLE_KEYS = tuple(name for name in UpstreamSettings.model_fields if name != "api_key")
"""The keys an ``[[upstreams]]`` table may hold (its key itself comes from ``api_key_env``)."""


def load_settings(
    *,
    cli: Mapping[str, object] | None = None,
    environ: Mapping[str, str] | None = None,
    config_path: str | None = None,
) -> Settings:
    """Settings from defaults < config file < environment (``SKILLSTATE_*``) < ``cli``.

        ``cli`` maps keys to flag values (``None`` means the flag was not given); text values are
        parsed as environment text is. ``environ`` defaults to ``os.environ``. The config file is
        ``config_path``, else ``$SKILLSTATE_CONFIG``, else the default file when it exists
    (``_default_file``). Raises ``ConfigError`` listing
        every unknown key, unknown ``SKILLSTATE_*`` variable and bad value, each with its source.
    """
    env = os.environ if environ is None else environ
    reading = Reading(home=home_directory(env), cwd=Path.cwd())
    merged: Layer = {}
    path = _config_file(config_path, env, reading)
    if path is not None:
        _lay(merged, read_file(path, reading))
    from_env, unknown = read_environment(env, reading)
    _lay(merged, from_env)
    _lay(merged, read_command_line(cli or {}, reading))
    upstreams = merged.get("upstreams")
    named = _key_variables(None if upstreams is None else upstreams.value)
    known = [key.upper() for key in KEYS] + [CONFIG_VARIABLE.removeprefix(ENV_PREFIX)]
    reading.problems.extend(
        unknown_variable(name, ENV_PREFIX, known) for name in unknown if name not in named
    )
    if upstreams is not None:
        merged["upstreams"] = _with_keys(upstreams, env, reading)
    if reading.problems:
        raise ConfigError(reading.problems)
    settings = _validate(merged, default_data_dir(env))
    if settings.tenant_api_keys:
        settings._tenant_keys = _tenant_keys(settings, merged["tenant_api_keys"].source, env)
    settings._telemetry = telemetry_of(settings.otel_endpoint, env)
    return settings


def _tenant_keys(
    settings: Settings, source: str, environ: Mapping[str, str]
) -> dict[tuple[str, str | None], str]:
    """Each tenant's provider key (``tenant_api_keys``), read from the variable it names."""
    problems: list[str] = []
    keys: dict[tuple[str, str | None], str] = {}
    upstreams = {upstream.name for upstream in settings.resolved_upstreams()}
    for entry in settings.tenant_api_keys:
        tenant, upstream, name = values.tenant_key_entry(entry)
        key = environ.get(name)
        try:
            values.check_api_key(key or "")
        except ValueError as exc:
            reason = f"environment variable {name} " + ("is not set" if key is None else str(exc))
            problems.append(value_problem("tenant_api_keys", entry, source, reason))
            continue
        if upstream is not None and upstream not in upstreams:
            known = ", ".join(sorted(upstreams)) or "none"
            reason = f"no upstream is named {upstream!r} (upstreams: {known})"
            problems.append(value_problem("tenant_api_keys", entry, source, reason))
        keys[(tenant, upstream)] = key or ""
    if problems:
        raise ConfigError(problems)
    return keys


def _lay(merged: Layer, layer: Layer) -> None:
    """``layer`` over ``merged``: each key replaces the one before, except a choice of lanes
    (``--lanes a,b``), which switches the lanes of the tables before it and keeps their
    options."""
    for key, entry in layer.items():
        if isinstance(entry.value, LaneChoice):
            before = merged.get(key)
            tables = before.value if before is not None else {}
            chosen = with_only(tables if isinstance(tables, Mapping) else {}, entry.value.names)
            entry = Entry(chosen, entry.raw, entry.source)
        merged[key] = entry


def _config_file(given: str | None, environ: Mapping[str, str], reading: Reading) -> Path | None:
    if given is not None:
        text, source = given, "command line --config"
    elif CONFIG_VARIABLE in environ:
        text, source = environ[CONFIG_VARIABLE], f"environment {CONFIG_VARIABLE}"
    else:
        return _default_file(environ)
    try:
        return resolve_path(text, reading.cwd, reading.home)
    except ValueError as exc:
        reading.problems.append(value_problem("config", text, source, str(exc)))
        return None


def _default_file(environ: Mapping[str, str]) -> Path | None:
    """``$XDG_CONFIG_HOME/skillstate/config.toml`` (``~/.config/...``, where ``skillstate
    config --init`` writes) when it exists. Only from an environment that names a home or
    a config home: one that names neither (a test's) reads no file of the machine's."""
    if not environ.get("HOME") and not environ.get("XDG_CONFIG_HOME"):
        return None
    path = default_config_file(environ)
    return path if path.is_file() else None


def _key_variables(upstreams: object) -> set[str]:
    """The environment variables the upstream tables name with ``api_key_env``."""
    if not isinstance(upstreams, list | tuple):
        return set()
    return {
        table["api_key_env"]
        for table in upstreams
        if isinstance(table, dict) and isinstance(table.get("api_key_env"), str)
    }


def _with_keys(entry: Entry, environ: Mapping[str, str], reading: Reading) -> Entry:
    """The upstream tables with each key read from the variable its ``api_key_env`` names.

    A key written into a table is refused: the file would then hold a secret that ``config``
    output, backups and shared dotfiles carry along.
    """
    if not isinstance(entry.value, list | tuple):
        return entry
    tables: list[object] = []
    for index, table in enumerate(entry.value):
        if isinstance(table, dict):
            table = _with_key(f"upstreams[{index}]", table, entry.source, environ, reading)
        tables.append(table)
    return Entry(tables, entry.raw, entry.source)


def _with_key(
    path: str,
    table: dict[str, object],
    source: str,
    environ: Mapping[str, str],
    reading: Reading,
) -> dict[str, object]:
    if "api_key" in table:
        reading.problems.append(
            f"'{path}.api_key' is not a known key (from {source}): put the key in an "
            "environment variable and name that variable with api_key_env"
        )
    name = table.get("api_key_env")
    if not isinstance(name, str) or not name:
        return table
    key = environ.get(name)
    try:
        values.check_api_key(key or "")
    except ValueError as exc:
        reason = f"environment variable {name} " + ("is not set" if key is None else str(exc))
        reading.problems.append(value_problem(f"{path}.api_key_env", name, source, reason))
        return table
    return {**table, "api_key": key}


def _validate(merged: Layer, data_dir: Path) -> Settings:
    data = {key: entry.value for key, entry in merged.items()}
    data.setdefault("data_dir", data_dir)
    try:
        settings = Settings.model_validate(data)
    except ValidationError as exc:
        raise ConfigError(validation_problems(exc, merged, _TABLE_KEYS)) from None
    sources = {key: merged[key].source if key in merged else "default" for key in KEYS}
    table = merged.get("collapse")
    if table is not None and isinstance(table.value, Mapping):
        sources.update({f"collapse.{name}": table.source for name in table.value})
    settings._sources = sources
    return settings
