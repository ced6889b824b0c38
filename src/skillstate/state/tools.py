"""The two internal tools the gateway offers the model and answers itself (hybrid mode).

``skill_state`` patches Σ; ``recall`` fetches archived content exactly, by ref, or the lines
matching a query with some context. Both are canonical ``Tool`` definitions (adapters encode
them for each wire) with a flat object schema, which every provider's function calling takes
(top-level ``oneOf`` is refused by some); the validators here enforce what a flat schema cannot
say, with errors the model can act on.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from skillstate.conversation.model import Json, Tool
from skillstate.state.schema import StateSchema
from skillstate.support import jsonio

SKILL_STATE_TOOL = "skill_state"
RECALL_TOOL = "recall"

INTERNAL_TOOLS = (SKILL_STATE_TOOL, RECALL_TOOL)

DEFAULT_RECALL_CONTEXT = 3
"""Lines of context around each matching line when a recall by query names none."""

MAX_RECALL_CONTEXT = 50
"""The most context lines a recall may ask for, so one answer stays a small observation."""


@dataclass(frozen=True, slots=True)
class ToolCallError:
    """Why a call's arguments were refused; ``reason`` is sent back as the tool's result."""

    reason: str


@dataclass(frozen=True, slots=True)
class RecallByRef:
    """Fetch the archived content under ``ref`` exactly, a page from character ``offset``."""

    ref: str
    offset: int = 0


@dataclass(frozen=True, slots=True)
class RecallByQuery:
    """Fetch the archived lines containing ``query``, each with ``context`` lines around it."""

    query: str
    context: int = DEFAULT_RECALL_CONTEXT


def internal_names(client_tools: Iterable[str]) -> dict[str, str]:
    """The names the internal tools are offered under for a client offering ``client_tools``:
    name -> which internal tool (``skill_state`` or ``recall``). A tool keeps its own name
    unless the client has one by that name; it then becomes ``skillstate_<name>`` (then
    ``skillstate_<name>_2``...), so a client's own ``recall`` is never answered by the
    gateway. Deterministic: the same client tools give the same names (the prefix stays
    cached)."""
    taken = set(client_tools)
    names: dict[str, str] = {}
    for tool in INTERNAL_TOOLS:
        name, n = tool, 1
        while name in taken:
            n += 1
            name = f"skillstate_{tool}" if n == 2 else f"skillstate_{tool}_{n - 1}"
        taken.add(name)
        names[name] = tool
    return names


def internal_tool(name: str) -> str:
    """Which internal tool a name ``internal_names`` offered stands for (``recall`` for
    ``skillstate_recall_2``); a name it never gives comes back as it is."""
    base = name.removeprefix("skillstate_")
    stem, _, number = base.rpartition("_")
    return stem if number.isdigit() and stem in INTERNAL_TOOLS else base


def skill_state_tool(schema: StateSchema) -> Tool:
    """The ``skill_state`` tool for a session with ``schema``: its description lists Σ's keys
    and shapes and says how a merge patch works, so the model can patch without seeing P."""
    description = (
        "Update the task state that stands in for the earlier conversation. Send a JSON Merge "
        "Patch under `patch`: only what changed; objects merge, arrays replace whole, null "
        "deletes a key (unless its rule below keeps it). Collections are objects keyed by "
        'short slugs, so add one entry as {"findings": {"slug": "text"}} instead of '
        "resending them. Call it alongside your next "
        "real tool call, in the same turn, rather than in a turn of its own: a turn spent only "
        "on the state costs a whole extra request. State keys:\n" + schema.describe()
    )
    parameters: Json = {
        "type": "object",
        "properties": {
            "patch": {
                "type": "object",
                "description": "JSON Merge Patch of the state (keys as listed above).",
            }
        },
        "required": ["patch"],
        "additionalProperties": False,
    }
    return Tool(name=SKILL_STATE_TOOL, description=description, parameters=parameters)


def recall_tool() -> Tool:
    """The ``recall`` tool: archived content by ``ref``, or matching lines by ``query``."""
    description = (
        "Fetch earlier content that was archived out of the conversation, exactly as it was. "
        "Give `ref` (an archive ref named in the state message or in a view of a tool "
        "output) for the whole span, a page at a time (`offset` reads on where a page says), "
        "or `query` for the archived lines containing that text, with `context` lines around "
        f"each (default {DEFAULT_RECALL_CONTEXT}, at most {MAX_RECALL_CONTEXT})."
    )
    parameters: Json = {
        "type": "object",
        "properties": {
            "ref": {"type": "string", "description": "Archive ref of the span to fetch."},
            "offset": {
                "type": "integer",
                "description": "With ref: the character to read on from (a page says).",
                "minimum": 0,
            },
            "query": {"type": "string", "description": "Text to find in archived lines."},
            "context": {
                "type": "integer",
                "description": "Lines of context around each match (with query).",
                "minimum": 0,
                "maximum": MAX_RECALL_CONTEXT,
            },
        },
        "additionalProperties": False,
    }
    return Tool(name=RECALL_TOOL, description=description, parameters=parameters)


def parse_skill_state_call(arguments_json: str) -> Json | ToolCallError:
    """The patch in a ``skill_state`` call's arguments: an object with only ``patch``, itself
    an object. A patch sent as a string holding a JSON object (double-encoded, as some models
    do) is decoded. Whether the patch fits the schema is ``merge.apply_patch``'s call."""
    arguments = _arguments(arguments_json, SKILL_STATE_TOOL)
    if isinstance(arguments, ToolCallError):
        return arguments
    extra = _unknown(arguments, {"patch"})
    if extra:
        return ToolCallError(f"skill_state takes only `patch`; remove {extra}")
    if "patch" not in arguments:
        return ToolCallError('skill_state needs `patch`, e.g. {"patch": {"step": 2}}')
    patch = arguments["patch"]
    if isinstance(patch, str):
        patch = _decoded_object(patch)
    if not isinstance(patch, dict):
        return ToolCallError("`patch` must be a JSON object (a merge patch of the state)")
    return patch


def parse_recall_call(arguments_json: str) -> RecallByRef | RecallByQuery | ToolCallError:
    """What a ``recall`` call asks for: ``{"ref": str}``, or ``{"query": str}`` with an
    optional ``{"context": int}`` between 0 and ``MAX_RECALL_CONTEXT``; never both."""
    arguments = _arguments(arguments_json, RECALL_TOOL)
    if isinstance(arguments, ToolCallError):
        return arguments
    extra = _unknown(arguments, {"ref", "offset", "query", "context"})
    if extra:
        return ToolCallError(
            f"recall takes `ref` and `offset`, or `query` and `context`; remove {extra}"
        )
    if "ref" in arguments:
        return _by_ref(arguments)
    if "query" in arguments:
        return _by_query(arguments)
    return ToolCallError("recall needs `ref` (an archive ref) or `query` (text to find)")


def _by_ref(arguments: Json) -> RecallByRef | ToolCallError:
    if "query" in arguments or "context" in arguments:
        return ToolCallError("give recall either `ref` or `query` (with `context`), not both")
    ref = arguments["ref"]
    if not isinstance(ref, str) or not ref.strip():
        return ToolCallError("`ref` must be a non-empty string (an archive ref)")
    offset = arguments.get("offset", 0)
    if not isinstance(offset, int) or isinstance(offset, bool) or offset < 0:
        return ToolCallError("`offset` must be an integer from 0 (a character of the span)")
    return RecallByRef(ref.strip(), offset)


def _by_query(arguments: Json) -> RecallByQuery | ToolCallError:
    query = arguments["query"]
    if not isinstance(query, str) or not query.strip():
        return ToolCallError("`query` must be a non-empty string")
    context = arguments.get("context", DEFAULT_RECALL_CONTEXT)
    valid = isinstance(context, int) and not isinstance(context, bool)
    if not valid or not 0 <= context <= MAX_RECALL_CONTEXT:
        return ToolCallError(f"`context` must be an integer from 0 to {MAX_RECALL_CONTEXT}")
    return RecallByQuery(query, context)


def _arguments(arguments_json: str, tool: str) -> Json | ToolCallError:
    """The call's arguments as an object; an empty string is ``{}`` (some wires send it)."""
    if not arguments_json.strip():
        return {}
    try:
        value = jsonio.loads(arguments_json)
    except (ValueError, RecursionError) as error:
        return ToolCallError(f"the arguments of {tool} are not valid JSON ({error})")
    if not isinstance(value, dict):
        return ToolCallError(f"the arguments of {tool} must be a JSON object")
    return value


def _unknown(arguments: Json, allowed: set[str]) -> str:
    return ", ".join(f"`{key}`" for key in arguments if key not in allowed)


def _decoded_object(text: str) -> Any:
    try:
        return jsonio.loads(text)
    except (ValueError, RecursionError):
        return text
