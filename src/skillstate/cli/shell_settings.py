"""The settings ``skillstate shell`` uses — ``data_dir``, ``archive_ttl_days``,
``archive_max_mb``, and the data key's ``data_key_file`` and ``data_key`` — read without the
settings model (pydantic and every lane's options take longer to import than the shell lane's
whole run).

Contract: the same values, from the same sources with the same precedence, and the same
problem text for a bad value of these keys as ``config.load_settings``: defaults < config file
(``--config``, else ``$SKILLSTATE_CONFIG``, else the default file when it exists) < environment
(``SKILLSTATE_<KEY>``) < the ``--data-dir`` flag. Other keys are not read here, so a problem
with one of them (an unknown key, a bad port) does not stop the shell lane.
tests/cli/test_shell_settings.py checks each case against ``load_settings``.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from skillstate.support.files import resolve_path

_PREFIX = "SKILLSTATE_"
_CONFIG_VARIABLE = "SKILLSTATE_CONFIG"
_INTEGER = re.compile(r"[+-]?[0-9]+\Z")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+(?:\.[0-9]*)?|\.[0-9]+)(?:[eE][+-]?[0-9]+)?\Z")
_USERINFO = re.compile(r"(?<=//)[^/@]*@")
_MAX_SHOWN = 80


@dataclass(frozen=True, slots=True)
class ShellSettings:
    """Where the shell lane archives, the archive's bounds, and where the data key is (the
    archive is sealed at rest when one is set: ``storage.data_key``)."""

    data_dir: Path
    archive_ttl_days: float = 7.0
    archive_max_mb: int = 500
    data_key_file: Path | None = None
    data_key: str | None = field(default=None, repr=False)


class SettingsProblems(Exception):
    """The problems found, each worded as ``load_settings`` words it."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


@dataclass(frozen=True, slots=True)
class _Entry:
    value: object
    raw: object
    source: str


def read_settings(
    *,
    data_dir: str | None = None,
    config_path: str | None = None,
    environ: Mapping[str, str] | None = None,
    cwd: Path | None = None,
) -> ShellSettings:
    """The shell lane's settings (see the module docstring); ``SettingsProblems`` for a bad
    value or an unreadable config file."""
    env = os.environ if environ is None else environ
    here = Path.cwd() if cwd is None else cwd
    home = _home(env)
    problems: list[str] = []
    merged: dict[str, _Entry] = {}
    path = _config_file(config_path, env, here, home, problems)
    if path is not None:
        merged.update(_from_file(path, home, problems))
    for key in _KEYS:
        name = _PREFIX + key.upper()
        if name in env:
            _put(merged, _from_text(key, env[name], f"environment {name}", here, home, problems))
    if data_dir is not None:
        source = "command line --data-dir"
        _put(merged, _from_text("data_dir", data_dir, source, here, home, problems))
    if problems:  # as load_settings: what could not be read, before what reads wrong
        raise SettingsProblems(problems)
    # In the settings model's order of fields, as pydantic reports them.
    found = {key: _checked(key, merged[key], problems) for key in _KEYS if key in merged}
    if problems:
        raise SettingsProblems(problems)
    return ShellSettings(
        data_dir=_path(found.get("data_dir")) or _default_data_dir(env, home),
        archive_ttl_days=float(_number(found.get("archive_ttl_days"), 7.0)),
        archive_max_mb=int(_number(found.get("archive_max_mb"), 500)),
        data_key_file=_path(found.get("data_key_file")),
        data_key=_text(found.get("data_key")),
    )


def _put(merged: dict[str, _Entry], entry: tuple[str, _Entry] | None) -> None:
    if entry is not None:
        merged[entry[0]] = entry[1]


def _home(environ: Mapping[str, str]) -> Path:
    home = environ.get("HOME")
    return Path(home) if home else Path.home()


def _default_data_dir(environ: Mapping[str, str], home: Path) -> Path:
    xdg = environ.get("XDG_DATA_HOME", "")
    if xdg and Path(xdg).is_absolute():
        return Path(xdg) / "skillstate"
    return home / ".local" / "share" / "skillstate"


def _config_file(
    given: str | None, env: Mapping[str, str], cwd: Path, home: Path, problems: list[str]
) -> Path | None:
    if given is not None:
        text, source = given, "command line --config"
    elif _CONFIG_VARIABLE in env:
        text, source = env[_CONFIG_VARIABLE], f"environment {_CONFIG_VARIABLE}"
    else:
        if not env.get("HOME") and not env.get("XDG_CONFIG_HOME"):
            return None
        xdg = env.get("XDG_CONFIG_HOME", "")
        base = Path(xdg) if xdg and Path(xdg).is_absolute() else home / ".config"
        default = base / "skillstate" / "config.toml"
        return default if default.is_file() else None
    try:
        return resolve_path(text, cwd, home)
    except ValueError as exc:
        problems.append(_problem("config", text, source, str(exc)))
        return None


def _from_file(path: Path, home: Path, problems: list[str]) -> dict[str, _Entry]:
    import tomllib  # only where there is a file to read

    source = f"config file {path}"
    try:
        with path.open("rb") as handle:
            document = tomllib.load(handle)
    except FileNotFoundError:
        problems.append(f"{source} does not exist")
        return {}
    except tomllib.TOMLDecodeError as exc:
        problems.append(f"{source} is not valid TOML: {exc}")
        return {}
    except OSError as exc:
        problems.append(f"{source} cannot be read: {exc.strerror or exc}")
        return {}
    found: dict[str, _Entry] = {}
    for key in _KEYS:
        if key in document:
            entry = _entry(key, document[key], document[key], source, path.parent, home, problems)
            if entry is not None:
                found[key] = entry
    return found


def _from_text(
    key: str, text: str, source: str, cwd: Path, home: Path, problems: list[str]
) -> tuple[str, _Entry] | None:
    if not text.strip():
        problems.append(_problem(key, text, source, "is empty; leave it out for the default"))
        return None
    parse = _PARSERS.get(key)
    try:
        value: object = text if parse is None else parse(text)
    except ValueError as exc:
        problems.append(_problem(key, text, source, str(exc)))
        return None
    entry = _entry(key, value, text, source, cwd, home, problems)
    return None if entry is None else (key, entry)


def _entry(
    key: str, value: object, raw: object, source: str, base: Path, home: Path, problems: list[str]
) -> _Entry | None:
    if key in ("data_dir", "data_key_file") and isinstance(value, str):
        try:
            value = resolve_path(value, base, home)
        except ValueError as exc:
            problems.append(_problem(key, raw, source, str(exc)))
            return None
    return _Entry(value, raw, source)


def _checked(key: str, entry: _Entry, problems: list[str]) -> object:
    """The value as the settings model types and checks it, or ``None`` with a problem."""
    value = entry.value
    reason = _CHECKS[key](value)
    if reason is not None:
        problems.append(_problem(key, entry.raw, entry.source, reason))
        return None
    return value


def _check_path(value: object) -> str | None:
    return None if isinstance(value, Path) else "not a path"


def _check_days(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return "not a number"
    return _positive(float(value))


def _check_mb(value: object) -> str | None:
    if isinstance(value, bool) or not isinstance(value, int):
        return "not an integer"
    return _positive(float(value))


def _positive(number: float) -> str | None:
    return None if math.isfinite(number) and number > 0 else "must be greater than 0"


def _check_text(value: object) -> str | None:
    return None if isinstance(value, str) else "not a string"


def _text(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _path(value: object) -> Path | None:
    return value if isinstance(value, Path) else None


def _number(value: object, default: float) -> float:
    return float(value) if isinstance(value, int | float) else default


def _parse_int(text: str) -> int:
    if not _INTEGER.match(text.strip()):
        raise ValueError("not an integer")
    return int(text)


def _parse_float(text: str) -> float:
    if not _DECIMAL.match(text.strip()):
        raise ValueError("not a number")
    return float(text)


def _problem(key: str, value: object, source: str, reason: str) -> str:
    """As ``config.messages.value_problem``."""
    if isinstance(value, str):
        value = _USERINFO.sub("***@", value)
    text = repr(value)
    shown = text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."
    return f"{key}={shown} from {source}: {reason}"


_PARSERS: dict[str, Callable[[str], object]] = {
    "archive_ttl_days": _parse_float,
    "archive_max_mb": _parse_int,
}
_CHECKS: dict[str, Callable[[object], str | None]] = {
    "data_dir": _check_path,
    "archive_ttl_days": _check_days,
    "archive_max_mb": _check_mb,
    "data_key_file": _check_path,
    "data_key": _check_text,
}
_KEYS = tuple(_CHECKS)
