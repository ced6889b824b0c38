"""The tool-schema compaction lane (``schemas``): the tools a client offers, without the schema
metadata the model does not use.

Per request, every ``function`` tool's ``parameters`` go through ``compact_schema`` (what is
removed and what never changes is that function's contract, in ``schema_compaction``), and
the description of every ``function`` and ``custom`` tool gets the same whitespace collapse and
optional cut. A tool's ``name``, ``kind``, ``cache``, ``extra`` and ``hints`` never change;
tools of any other kind (a namespace, a hosted tool) pass whole.

The compacted list is used only when it is smaller in tokens (``tools_tokens``); otherwise the
request is returned as it came, the same object. A session re-sends the same tools on every
request and the provider's prefix cache needs identical bytes, so the result is memoized by
content: the same tools give the same output every time, for a dictionary lookup.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass, replace

from skillstate.conversation import Request, Tool
from skillstate.conversation.model import Json
from skillstate.economics.tokenizer import count_tokens
from skillstate.pipeline.lane import LaneContext, LaneOutcome
from skillstate.pipeline.schema_compaction import compact_description, compact_schema
from skillstate.pipeline.surface import LaneSpec
from skillstate.support import jsonio

MEMO_SIZE = 256

MIN_DESCRIPTION_CHARS = 64
"""The smallest cut bound: below it the cut's own marker would be most of what is left."""


@dataclass(frozen=True, slots=True)
class SchemasOptions:
    """The ``schemas`` lane's. ``description_chars``: cut a tool's or a schema's description
    longer than this many characters, marking the cut in the text (``… [cut 1,234 chars]``);
    0, the default, never cuts. The cut is the one lossy step and so is opt-in; everything
    else the lane does is lossless and always on."""

    description_chars: int = 0

    def __post_init__(self) -> None:
        chars = self.description_chars
        if chars != 0 and chars < MIN_DESCRIPTION_CHARS:
            raise ValueError(
                f"description_chars must be 0 (never cut) or at least {MIN_DESCRIPTION_CHARS}"
                f", not {chars}"
            )


def compact_tool(tool: Tool, options: SchemasOptions) -> Tool:
    """``tool`` with its description and parameters compacted; the same object when its kind
    is not one this lane reads."""
    if tool.kind not in ("function", "custom"):
        return tool
    chars = options.description_chars
    description = tool.description
    if description is not None:
        description = compact_description(description, chars)
    parameters = tool.parameters
    if parameters is not None and tool.kind == "function":
        parameters = compact_schema(parameters, chars)
    return replace(tool, description=description, parameters=parameters)


def compact_tools(tools: list[Tool], options: SchemasOptions) -> list[Tool]:
    return [compact_tool(tool, options) for tool in tools]


def tools_tokens(tools: list[Tool]) -> int:
    """The tokens of the tools as the lane weighs them: the JSON of each tool's name,
    description and parameters."""
    return sum(count_tokens(jsonio.dumps_str(_weighed(tool))) for tool in tools)


def _weighed(tool: Tool) -> Json:
    return {"name": tool.name, "description": tool.description, "parameters": tool.parameters}


@dataclass(frozen=True, slots=True)
class _Compacted:
    """What the memo keeps for one tool list: the compacted fields in order, or None where
    compaction saved nothing, and the token counts."""

    fields: tuple[tuple[str | None, Json | None], ...] | None
    before: int
    after: int


class SchemasLane:
    """The lane. The compacted schemas it hands out are shared by every request that sent the
    same tools: like the rest of the canonical request, they are not changed once built."""

    name: str = "schemas"

    def __init__(self, options: SchemasOptions | None = None) -> None:
        self.options = options if options is not None else SchemasOptions()
        self._memo: OrderedDict[bytes, _Compacted] = OrderedDict()

    async def __call__(self, request: Request, context: LaneContext) -> LaneOutcome:
        if not request.tools:
            return LaneOutcome(request)
        compacted = self._compacted(request.tools)
        if compacted.fields is None:
            return LaneOutcome(request)
        tools = [
            tool if tool.kind not in ("function", "custom") else _with(tool, fields)
            for tool, fields in zip(request.tools, compacted.fields, strict=True)
        ]
        report = {
            "tools": len(tools),
            "tokens_before": compacted.before,
            "tokens_after": compacted.after,
        }
        saved = compacted.before - compacted.after
        return LaneOutcome(replace(request, tools=tools), report=report, summary=f"-{saved}t")

    def _compacted(self, tools: list[Tool]) -> _Compacted:
        key = _key(tools)
        found = self._memo.get(key)
        if found is not None:
            self._memo.move_to_end(key)
            return found
        found = _compact(tools, self.options)
        self._memo[key] = found
        if len(self._memo) > MEMO_SIZE:
            self._memo.popitem(last=False)
        return found


def _with(tool: Tool, fields: tuple[str | None, Json | None]) -> Tool:
    description, parameters = fields
    return replace(tool, description=description, parameters=parameters)


def _compact(tools: list[Tool], options: SchemasOptions) -> _Compacted:
    compacted = compact_tools(tools, options)
    before, after = tools_tokens(tools), tools_tokens(compacted)
    if after >= before:
        return _Compacted(None, before, after)
    fields = tuple((tool.description, tool.parameters) for tool in compacted)
    return _Compacted(fields, before, after)


def _key(tools: list[Tool]) -> bytes:
    """The tools' content, as far as compaction reads it: kind, name, description and
    parameters, in order (key order included: the output keeps it)."""
    content = [[t.kind, t.name, t.description, t.parameters] for t in tools]
    return hashlib.sha256(jsonio.dumps(content)).digest()


LANE = LaneSpec(
    name=SchemasLane.name,
    build=lambda parts, options: SchemasLane(options),
    options=SchemasOptions,
)
"""Off unless switched on: it rewrites the client's own tools and saves too little billed to
be worth that (the tools are cached after the first request; docs/lanes.md)."""
