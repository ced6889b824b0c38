"""The instruction fragment for a project's ``AGENTS.md`` (Codex, OpenCode) or ``CLAUDE.md``
(Claude Code): a few lines telling the agent what Σ and ``recall`` are.

It is written only into a project's file, and only when asked: a user's global instruction
files are never edited.
"""

from __future__ import annotations

from pathlib import Path

from skillstate.integrations.model import Block, BlockEdit, Host, Syntax

TEXT = """\
## skillstate

This session runs through skillstate, a local context gateway. It keeps an execution state,
Σ, for the session: what was learned (files, findings, errors, commands, the next step). When
older turns are collapsed, Σ stands in for them, so record durable facts in Σ with the
`skill_state` tool when it is offered. Bulky tool outputs may be shown as short views that
name an archive ref; call `recall` with that ref (and a query, to get only the lines that
match) to read the full text instead of re-running the command. The `skillstate` MCP server
offers the same through `retrieve` and `state`.
"""


def file_name(host: Host) -> str:
    """The instruction file the host reads from a project."""
    return "CLAUDE.md" if host is Host.CLAUDE else "AGENTS.md"


def fragment_edit(host: Host, project: Path) -> BlockEdit:
    """The fragment as a managed block at the end of the project's instruction file."""
    return BlockEdit(project / file_name(host), (Block(TEXT),), Syntax.MARKDOWN, "<!-- {} -->")
