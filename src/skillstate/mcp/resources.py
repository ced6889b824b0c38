"""The archive as MCP resources: one resource per archived span, ``skillstate://archive/{ref}``,
whose text is the span's reading text (``span_text``), whole.

A resource list cannot be asked per session, so ``list_entries`` lists the spans of every
session the state store knows, and of the ``compress`` tool's default session (the caller's,
and each tenant's with a session), newest first and capped; any ref reads, listed or not (the
URI template says so), for a tenant only its own.
"""

from __future__ import annotations

from dataclasses import dataclass

from skillstate.archive import Archive, is_ref
from skillstate.mcp.tools import DEFAULT_SESSION
from skillstate.storage.protocols import StateStore
from skillstate.storage.tenants import named, owner, owns

URI_PREFIX = "skillstate://archive/"
URI_TEMPLATE = URI_PREFIX + "{ref}"
MIME_TYPE = "text/plain"

MAX_LISTED = 500
"""The most resources one list holds."""


@dataclass(frozen=True, slots=True)
class Listed:
    """One archived span as the resource list names it."""

    uri: str
    ref: str
    session: str
    summary: str
    size: int


def uri_of(ref: str) -> str:
    return URI_PREFIX + ref


def ref_of(uri: str) -> str | None:
    """The ref a resource URI names, or None when it names none."""
    if not uri.startswith(URI_PREFIX):
        return None
    ref = uri.removeprefix(URI_PREFIX)
    return ref if is_ref(ref) else None


async def list_entries(
    archive: Archive, state: StateStore, cap: int = MAX_LISTED, *, scope: str | None = None
) -> list[Listed]:
    """The archived spans of every known session (``scope``'s, for a tenant), newest first,
    each ref once, at most ``cap`` of them."""
    sessions = [info.session for info in await state.list_sessions() if owns(scope, info.session)]
    # What compress filed under its default session, the scope's and each tenant's seen.
    tenants = {scope, *(owner(session) for session in sessions)}
    defaults = sorted(
        named(tenant, DEFAULT_SESSION)
        for tenant in tenants
        if owns(scope, named(tenant, DEFAULT_SESSION))
    )
    sessions += [session for session in defaults if session not in sessions]
    found = [entry for session in sessions for entry in await archive.entries(session)]
    found.sort(key=lambda entry: entry.created, reverse=True)
    listed: dict[str, Listed] = {}
    for entry in found:
        if entry.ref not in listed:
            listed[entry.ref] = Listed(
                uri_of(entry.ref), entry.ref, entry.session, entry.summary, entry.size
            )
        if len(listed) >= cap:
            break
    return list(listed.values())
