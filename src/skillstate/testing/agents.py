"""A policy that plays the model for a real agent CLI (Codex, OpenCode, Claude Code): the first
turn calls the client's shell tool once, the turn that carries the tool's result ends with a
final text. Side requests the clients make on their own (OpenCode's and Claude Code's session
titles, which offer no tools) get a short title, as JSON when the request asks for a JSON
answer.

The policy reads whatever wire the upstream hears, so it works the same behind a gateway that
translates: Claude Code's ``Bash`` tool may reach it as a Chat Completions function. What it
did is kept for the test to check: ``calls`` holds each call it made with the id the scripted
upstream generated for it, ``outputs`` each tool result that came back.

``LoopPolicy`` plays a long loop instead: one shell call per request until a number of results
have come back, with one call to the gateway's ``recall`` tool on the way.

The command prints ``MARKER`` without containing it (``printf 'skillstate-%s\\n' e2e``), so
finding the marker in a tool result proves the command ran rather than being echoed back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from skillstate.conversation import Wire
from skillstate.support import jsonio
from skillstate.testing.outcome import resolve
from skillstate.testing.recording import RecordedRequest
from skillstate.testing.replies import Reply, ScriptedCall
from skillstate.testing.session_view import HANDOVER_HEADING

#: What the shell command prints, and what a test looks for in the tool result.
MARKER = "skillstate-e2e"
#: Prints ``MARKER`` in any POSIX shell; the command text itself does not contain it.
COMMAND = "printf 'skillstate-%s\\n' e2e"
FINAL_TEXT = "The marker was printed; the round trip is complete."
TITLE = "Print the e2e marker"
#: The shell tool of each client, by name: Codex, OpenCode, Claude Code, then older Codex names.
SHELL_TOOLS = ("exec_command", "bash", "Bash", "shell_command", "shell")


class NoShellTool(LookupError):
    """The request offers tools but none of them is a shell the policy knows."""


@dataclass(frozen=True, slots=True)
class IssuedCall:
    """A tool call the policy made: ``id`` is the call id the upstream sent for it."""

    request: int
    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True)
class ToolOutput:
    """A tool result found in request ``request``, answering the call ``call_id``."""

    request: int
    call_id: str
    text: str


@dataclass(slots=True)
class AgentPolicy:
    """``ScriptedUpstream(AgentPolicy())``: one shell call, then ``final_text``; see the module
    docstring. ``side`` lists the indexes of the requests answered with a title."""

    command: str = COMMAND
    final_text: str = FINAL_TEXT
    title: str = TITLE
    shell_tools: Sequence[str] = SHELL_TOOLS
    calls: list[IssuedCall] = field(default_factory=list)
    outputs: list[ToolOutput] = field(default_factory=list)
    side: list[int] = field(default_factory=list)

    def __call__(self, request: RecordedRequest) -> Reply:
        wire, body = request.wire, request.json
        if wire is None or not isinstance(body, dict):
            raise ValueError(f"request #{request.index} is not a model request")
        found = [ToolOutput(request.index, cid, text) for cid, text in tool_outputs(wire, body)]
        if found:
            self.outputs.extend(found)
            return Reply(text=self.final_text)
        tools = dict(tool_schemas(wire, body))
        if not tools:
            self.side.append(request.index)
            wanted = wants_json(wire, body)
            return Reply(text=jsonio.dumps_str({"title": self.title}) if wanted else self.title)
        name = next((name for name in self.shell_tools if name in tools), None)
        if name is None:
            raise NoShellTool(
                f"no shell tool among {sorted(tools)} (looked for {self.shell_tools})"
            )
        reply = Reply(calls=[ScriptedCall(name, shell_arguments(tools[name], self.command))])
        issued = resolve(reply, request).calls[0]
        self.calls.append(IssuedCall(request.index, issued.id, issued.name, issued.arguments))
        return reply


def shell_arguments(schema: Mapping[str, Any], command: str) -> dict[str, Any]:
    """Arguments running ``command`` for a shell tool with this JSON schema: Codex's
    ``exec_command`` takes ``cmd``; ``bash`` / ``Bash`` take ``command`` (a string); older
    shells take ``command`` as an argv list. A ``description``, where offered, is filled in as
    Claude Code's model does."""
    properties = schema.get("properties")
    props: Mapping[str, Any] = properties if isinstance(properties, Mapping) else {}
    arguments: dict[str, Any]
    if "cmd" in props:
        arguments = {"cmd": command}
    elif _type_of(props.get("command")) == "array":
        arguments = {"command": ["bash", "-lc", command]}
    else:
        arguments = {"command": command}
    if "description" in props:
        arguments["description"] = "Print the e2e marker"
    return arguments


def tool_schemas(wire: Wire, body: Mapping[str, Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(name, JSON schema of the arguments) of each function tool the request offers. Hosted
    tools (Codex's ``web_search``) have no name and are skipped; Responses namespaces are
    opened."""
    tools = body.get("tools")
    yield from _named_tools(wire, tools if isinstance(tools, list) else [])


def _named_tools(wire: Wire, tools: list[Any]) -> Iterator[tuple[str, Mapping[str, Any]]]:
    for tool in tools:
        if not isinstance(tool, Mapping):
            continue
        if wire is Wire.CHAT:
            spec = tool.get("function")
            schema_key = "parameters"
        else:
            spec = tool
            schema_key = "input_schema" if wire is Wire.MESSAGES else "parameters"
        if wire is Wire.RESPONSES and tool.get("type") == "namespace":
            inner = tool.get("tools")
            yield from _named_tools(wire, inner if isinstance(inner, list) else [])
            continue
        if not isinstance(spec, Mapping) or not isinstance(spec.get("name"), str):
            continue
        schema = spec.get(schema_key)
        yield spec["name"], schema if isinstance(schema, Mapping) else {}


def tool_outputs(wire: Wire, body: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(call id, text) of each tool result in the request: Chat ``role:"tool"`` messages,
    Responses ``function_call_output`` items, Anthropic ``tool_result`` blocks."""
    found: list[tuple[str, str]] = []
    if wire is Wire.RESPONSES:
        items = body.get("input")
        for item in items if isinstance(items, list) else []:
            if isinstance(item, Mapping) and item.get("type") == "function_call_output":
                found.append((str(item.get("call_id")), _text(item.get("output"))))
        return found
    messages = body.get("messages")
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, Mapping):
            continue
        if wire is Wire.CHAT and message.get("role") == "tool":
            found.append((str(message.get("tool_call_id")), _text(message.get("content"))))
        content = message.get("content")
        if wire is Wire.MESSAGES and isinstance(content, list):
            found.extend(
                (str(block.get("tool_use_id")), _text(block.get("content")))
                for block in content
                if isinstance(block, Mapping) and block.get("type") == "tool_result"
            )
    return found


def wants_json(wire: Wire, body: Mapping[str, Any]) -> bool:
    """Whether the request asks for a JSON answer (Claude Code's title request does):
    ``output_config.format`` on Anthropic, ``response_format`` on Chat, ``text.format`` on
    Responses."""
    if wire is Wire.MESSAGES:
        holder, key = body.get("output_config"), "format"
    elif wire is Wire.CHAT:
        holder, key = body, "response_format"
    else:
        holder, key = body.get("text"), "format"
    fmt = holder.get(key) if isinstance(holder, Mapping) else None
    return isinstance(fmt, Mapping) and fmt.get("type") in ("json_schema", "json_object")


def _type_of(schema: Any) -> Any:
    return schema.get("type") if isinstance(schema, Mapping) else None


def _text(content: Any) -> str:
    """The text of a tool result: a string, or the text of its list of parts."""
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        return ""
    return "".join(
        part["text"]
        for part in content
        if isinstance(part, Mapping) and isinstance(part.get("text"), str)
    )


#: The shell command of one turn of a ``LoopPolicy``, from its 1-based turn number.
CommandFor = Callable[[int], str]


@dataclass(slots=True)
class LoopPolicy(AgentPolicy):
    """A long agent loop: one shell call per model request until ``turns`` tool results have
    come back, then ``final_text``. Turn ``n`` runs ``command_for(n)`` (``command`` every turn
    when it is None).

    At the gateway's handover (its ask for Σ before the history collapses) it replies with a
    patch saying how far the loop is, as a model would, and no call.

    With ``recall_query``, the policy calls the gateway's ``recall`` tool once with that query,
    instead of a shell call, at the first request whose body holds ``recall_cue`` (the text of
    the gateway's state message, say) and offers ``recall``. The gateway answers that call
    itself and asks again; ``recalls`` holds the call, ``recalled`` its result.

    A gateway that collapses the conversation sends only the newest results, so the policy
    counts each shell call's result once, by call id, whichever request brought it.
    """

    turns: int = 30
    command_for: CommandFor | None = None
    recall_query: str | None = None
    recall_cue: str | None = None
    recall_tool: str = "recall"
    recalls: list[IssuedCall] = field(default_factory=list)
    recalled: list[ToolOutput] = field(default_factory=list)
    handovers: list[int] = field(default_factory=list)
    """Indexes of the gateway's handover requests (its ask for Σ before it collapses the
    history), answered with a patch naming how far the loop is."""

    def __call__(self, request: RecordedRequest) -> Reply:
        wire, body = request.wire, request.json
        if wire is None or not isinstance(body, dict):
            raise ValueError(f"request #{request.index} is not a model request")
        self._collect(request.index, tool_outputs(wire, body))
        if HANDOVER_HEADING.encode() in request.body:
            self.handovers.append(request.index)
            done = f"{len(self.outputs)} of {self.turns} commands ran"
            return Reply(text=jsonio.dumps_str({"findings": {"loop": done}}))
        tools = dict(tool_schemas(wire, body))
        if not tools:
            self.side.append(request.index)
            wanted = wants_json(wire, body)
            return Reply(text=jsonio.dumps_str({"title": self.title}) if wanted else self.title)
        if len(self.outputs) >= self.turns:
            return Reply(text=self.final_text)
        if self._recall_now(request, tools):
            assert self.recall_query is not None
            call = ScriptedCall(self.recall_tool, {"query": self.recall_query})
            return self._issue(request, Reply(calls=[call]), self.recalls)
        name = next((name for name in self.shell_tools if name in tools), None)
        if name is None:
            raise NoShellTool(
                f"no shell tool among {sorted(tools)} (looked for {self.shell_tools})"
            )
        turn = len(self.calls) + 1
        command = self.command if self.command_for is None else self.command_for(turn)
        reply = Reply(calls=[ScriptedCall(name, shell_arguments(tools[name], command))])
        return self._issue(request, reply, self.calls)

    def _collect(self, index: int, found: list[tuple[str, str]]) -> None:
        """Keep each result of a call the policy made, the first time it is seen."""
        seen = {out.call_id for out in (*self.outputs, *self.recalled)}
        shell = {call.id for call in self.calls}
        recall = {call.id for call in self.recalls}
        for call_id, text in found:
            if call_id in seen:
                continue
            seen.add(call_id)
            if call_id in shell:
                self.outputs.append(ToolOutput(index, call_id, text))
            elif call_id in recall:
                self.recalled.append(ToolOutput(index, call_id, text))

    def _recall_now(self, request: RecordedRequest, tools: Mapping[str, Any]) -> bool:
        if self.recall_query is None or self.recalls or self.recall_tool not in tools:
            return False
        return self.recall_cue is None or self.recall_cue.encode() in request.body

    @staticmethod
    def _issue(request: RecordedRequest, reply: Reply, into: list[IssuedCall]) -> Reply:
        issued = resolve(reply, request).calls[0]
        into.append(IssuedCall(request.index, issued.id, issued.name, issued.arguments))
        return reply
