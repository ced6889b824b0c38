"""What an integration changes in a host's files, as data: the edits a host module returns and
the installer applies.

Two kinds of edit cover every host. A ``BlockEdit`` owns marker-delimited blocks of text (the
Codex ``config.toml``, an ``AGENTS.md``): everything between a pair of markers is ours, nothing
outside it is. A ``KeysEdit`` owns a few keys of a JSON object (``opencode.json``, Claude Code's
settings): each is named by its path from the root, and its value is ours while it still equals
what we wrote; it may also own items of a list the user shares with us (a hook among the
user's hooks): each is ours while the list holds it, the user's items are never touched.
Neither kind ever holds a credential; the hosts keep their own keys and logins.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from pathlib import Path
from typing import TypeAlias

JSON: TypeAlias = bool | int | float | str | list["JSON"] | dict[str, "JSON"] | None

DEFAULT_GATEWAY = "http://127.0.0.1:8789"
SERVER_NAME = "skillstate"
"""The name of the provider and of the MCP server in every host's config."""


class IntegrationError(Exception):
    """An integration cannot be done as asked; the message says why, and nothing was changed."""


class Host(enum.Enum):
    """An agent host skillstate can integrate with."""

    CODEX = "codex"
    OPENCODE = "opencode"
    CLAUDE = "claude"


class Syntax(enum.Enum):
    """How a block file is checked after an edit: it must still parse."""

    TOML = "toml"
    MARKDOWN = "markdown"


@dataclass(frozen=True, slots=True)
class Block:
    """One marker-delimited block. ``at_top`` blocks open the file (TOML top-level keys must
    precede every table); the others close it."""

    body: str
    at_top: bool = False


@dataclass(frozen=True, slots=True)
class BlockEdit:
    """Our blocks in the text file at ``path``, with ``comment`` the line-comment form of its
    syntax: ``"# {}"`` or ``"<!-- {} -->"``."""

    path: Path
    blocks: tuple[Block, ...]
    syntax: Syntax
    comment: str = "# {}"


@dataclass(frozen=True, slots=True)
class KeysEdit:
    """Our keys in the JSON object file at ``path``: each a path from the root and its value;
    ``items``: each a path to a list and the item of ours it holds."""

    path: Path
    keys: tuple[tuple[tuple[str, ...], JSON], ...]
    items: tuple[tuple[tuple[str, ...], JSON], ...] = ()


Edit: TypeAlias = BlockEdit | KeysEdit


@dataclass(frozen=True, slots=True)
class Locations:
    """Where a host's files are, from the environment and home directory passed in; ``project``
    is the project folder for project scope, ``None`` for user scope."""

    env: dict[str, str]
    home: Path
    project: Path | None = None


@dataclass(frozen=True, slots=True)
class Integration:
    """What one host gets: the edits, and notes for the user (how the host finds its key)."""

    host: Host
    edits: tuple[Edit, ...]
    notes: tuple[str, ...] = ()
