"""The wording of configuration problems.

Every problem names the key (``upstreams[0].base_url`` for a nested one) and the source it
came from, shows the value as written unless it may be secret, and says what is wrong:

    'prot' is not a known key (from config file /x/skillstate.toml); did you mean 'port'?
    port='abc' from environment SKILLSTATE_PORT: not an integer
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Collection, Iterator, Mapping
from typing import Protocol

from pydantic import ValidationError
from pydantic_core import ErrorDetails

_USERINFO = re.compile(r"(?<=//)[^/@]*@")
_MAX_SHOWN = 80

_REASONS = {
    "int_type": "not an integer",
    "int_parsing": "not an integer",
    "int_from_float": "not an integer",
    "float_type": "not a number",
    "float_parsing": "not a number",
    "finite_number": "not a finite number",
    "bool_type": "not a boolean",
    "bool_parsing": "not a boolean",
    "string_type": "not a string",
    "list_type": "not a list",
    "tuple_type": "not a list",
    "dict_type": "not a table (a JSON object)",
    "model_type": "not a table (a JSON object)",
    "model_attributes_type": "not a table (a JSON object)",
    "path_type": "not a path",
}


class Sourced(Protocol):
    """What a problem needs to know of a key's entry (``sources.Entry``)."""

    @property
    def raw(self) -> object: ...

    @property
    def source(self) -> str: ...


def unknown_key(path: str, source: str, known: Collection[str]) -> str:
    """``known`` are the names allowed where the path's last part stands."""
    parent, _, leaf = path.rpartition(".")
    close = _closest(leaf, known)
    hint = f"; did you mean {(parent + '.' if parent else '') + close!r}?" if close else ""
    return f"{path!r} is not a known key (from {source}){hint}"


def unknown_variable(name: str, prefix: str, known: Collection[str]) -> str:
    """``known`` are the names after ``prefix``; the shared prefix would make any name close."""
    close = _closest(name.removeprefix(prefix), known)
    hint = f"; did you mean {prefix + close!r}?" if close else ""
    return f"{name!r} is not a known variable (from environment){hint}"


def value_problem(path: str, value: object, source: str, reason: str) -> str:
    return f"{path}={show_value(path, value)} from {source}: {reason}"


def show_value(path: str, value: object) -> str:
    """The value as it may be printed: secrets, headers and URL credentials stay hidden."""
    leaf = path.rsplit(".", 1)[-1]
    if leaf in ("api_key", "auth_token", "data_key"):
        return "(secret)"
    if path.startswith("upstreams"):
        if ".headers" in path:
            return "(hidden)"
        if "." not in path:
            return "(...)"  # a whole table, a list of them or their JSON text may hold headers
    if isinstance(value, str):
        value = _USERINFO.sub("***@", value)
    text = repr(value)
    return text if len(text) <= _MAX_SHOWN else text[: _MAX_SHOWN - 3] + "..."


def validation_problems(
    exc: ValidationError, entries: Mapping[str, Sourced], nested_keys: Collection[str]
) -> Iterator[str]:
    """One problem per pydantic error, with the key's source; ``nested_keys`` are the keys an
    upstream table may hold (for suggestions)."""
    for error in exc.errors(include_url=False):
        problems = (error.get("ctx") or {}).get("problems")
        if problems is not None:  # a table read by its owner's parser (settings.OPTIONS)
            source = _source(entries, str(error["loc"][0]))
            yield from (f"{problem} (from {source})" for problem in problems)
        else:
            yield _problem(error, entries, nested_keys)


def _problem(error: ErrorDetails, entries: Mapping[str, Sourced], nested: Collection[str]) -> str:
    kind = error["type"]
    context = error.get("ctx") or {}
    if "keys" in context:  # a cross-key conflict (settings.CONFLICT) names its keys
        named = " and ".join(f"{key} (from {_source(entries, key)})" for key in context["keys"])
        return f"{named}: {context['reason']}"
    location = error["loc"]
    path = _path(location)
    source = _source(entries, str(location[0]))
    if kind == "extra_forbidden":
        return unknown_key(path, source, nested)
    if kind == "missing":
        return f"{path} is required (from {source})"
    top = entries.get(str(location[0]))
    value = top.raw if len(location) == 1 and top is not None else error["input"]
    return value_problem(path, value, source, _reason(kind, context, error["msg"]))


def _reason(kind: str, context: Mapping[str, object], message: str) -> str:
    if kind == "value_error":
        return str(context["error"])
    if kind in ("literal_error", "enum"):
        return f"must be {context['expected']}"
    return _REASONS.get(kind) or message[:1].lower() + message[1:]


def _path(location: tuple[int | str, ...]) -> str:
    """``("upstreams", 0, "base_url")`` -> ``upstreams[0].base_url``."""
    text = ""
    for part in location:
        text += f"[{part}]" if isinstance(part, int) else f".{part}" if text else part
    return text


def _source(entries: Mapping[str, Sourced], key: str) -> str:
    entry = entries.get(key)
    return "default" if entry is None else entry.source


def _closest(word: str, known: Collection[str]) -> str | None:
    close = difflib.get_close_matches(word, list(known), n=1)
    return close[0] if close else None
