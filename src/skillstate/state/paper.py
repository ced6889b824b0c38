"""Paper mode's rendering: every upstream request is A_t = (P, Σ_t, O_t).

As DESIGN.md ("State modes") puts it: P is the procedure, the session's system prompt as fixed
when the session started, followed by the paper protocol (how to reply, how Σ merges); Σ_t is
the state as compact JSON; O_t is the latest observation. Nothing else of the transcript is
sent, so a request's size does not grow with the session's length.

The observation and the task slot
---------------------------------

* When the conversation ends in tool results, O_t is the newest batch of results together
  with the assistant message whose calls they answer, verbatim (its text and reasoning
  included), so every call id stays paired with its result.
* When it ends in a user instruction and no tool loop has run yet (no assistant tool call
  before it), O_t is that user message.
* When it ends in a user instruction while a tool loop is running (an assistant tool call
  before it), the instruction goes to the **task slot** beside Σ, never into the observation
  slot, and O_t is the latest tool-result batch before it.

The task slot holds the newest instruction only, on every step, until a newer one replaces it.
When the observation is that instruction itself, the slot is left out rather than repeat it.

The prompt cache
----------------

The tools and P come first and are byte-identical on every request of a session (P is fixed at
the session's first request; nothing that changes per step, no counter or timestamp, goes
before Σ), so a provider's prefix cache can read them on every request after the first:

* Anthropic (explicit breakpoints, ``cache_markers``): the last system part, the protocol,
  carries the gateway's breakpoint, with the lifetime of the client's own system marker when it
  had one. The client's markers inside the observation are dropped: a prefix that ends after Σ
  changes every step, so such a marker only buys a cache write (1.25x) no later request reads.
  The client's markers on its tools stay (their prefix is stable too), within the limit of
  ``MAX_CACHE_BREAKPOINTS``.
* OpenAI (automatic prefix caching): nothing is marked; the same stable prefix is read from the
  cache once it reaches the provider's minimum (1,024 tokens).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from skillstate.conversation.model import (
    CacheMark,
    Image,
    Json,
    Message,
    Opaque,
    Part,
    Request,
    Text,
    ToolCall,
    ToolResult,
)
from skillstate.state.envelope import ENVELOPE_SHAPE
from skillstate.state.render import MARK, MAX_CACHE_BREAKPOINTS, shown_state
from skillstate.state.schema import StateSchema
from skillstate.state.sweep import CONTEXT_PREFIXES

PAPER_PROTOCOL = (
    "Protocol. A request holds only the task, the state Σ and the latest observation, so keep "
    "in Σ what you will need later. Reply with one JSON object (alone, or in one ```json "
    f"block): {ENVELOPE_SHAPE}. `state_patch` is a JSON Merge Patch of Σ: only what changed; "
    "objects merge key by key, arrays replace whole, null deletes a key (unless its rule keeps "
    "it), {} changes nothing. `action` is your next step, as the procedure asks."
)
"""The fixed part of the protocol text appended to P; ``paper_protocol`` adds Σ's keys."""

TASK_HEADING = "Task (the user's newest instruction):"
STATE_HEADING = "State Σ:"


def paper_protocol(schema: StateSchema) -> str:
    """The protocol text for a session with ``schema``: ``PAPER_PROTOCOL`` and Σ's keys."""
    return PAPER_PROTOCOL + "\nState keys:\n" + schema.describe()


def render_paper(
    request: Request,
    *,
    procedure: list[Text],
    state: Json,
    schema: StateSchema,
    task: str | None,
    cache_markers: bool = False,
) -> Request:
    """The paper-mode request for ``request`` (left untouched): system = ``procedure`` and the
    protocol; messages = one user message with the task slot and Σ, then the observation (see
    the module docstring). ``task`` is the newest instruction the session knows, used when the
    messages hold none (a client that sends only its latest step). Tools and parameters are
    the client's. ``cache_markers``: the upstream takes explicit breakpoints (Anthropic): one
    closes the stable prefix (tools and P), none follows it ("The prompt cache" above)."""
    observed = observe(request.messages)
    instruction = newest_instruction(request.messages)
    slot = task if instruction is None else instruction
    lines: list[str] = []
    if slot is not None and not observed.is_instruction:
        lines.append(f"{TASK_HEADING}\n{slot}")
    lines.append(f"{STATE_HEADING}\n```json\n{shown_state(state)}\n```")
    slot_message = Message("user", [Text("\n\n".join(lines))])
    protocol = Text(paper_protocol(schema))
    observation = observed.messages
    if cache_markers:
        observation = [_unmarked(message) for message in observation]
        tool_marks = sum(tool.cache is not None for tool in request.tools)
        if tool_marks < MAX_CACHE_BREAKPOINTS:
            protocol.cache = _procedure_mark(request.system)
    system = [*procedure, protocol]
    return replace(request, system=system, messages=[slot_message, *observation])


def _procedure_mark(system: Sequence[Text]) -> CacheMark:
    """The breakpoint after P: the client's own system marker when it had one (its lifetime
    kept), else the provider's default."""
    marks = [part.cache for part in system if part.cache is not None]
    return marks[-1] if marks else MARK


def _unmarked(message: Message) -> Message:
    """``message`` with no cache markers on its parts or inside its tool results (a copy: the
    client's request is left untouched)."""
    return replace(message, parts=[_unmarked_part(part) for part in message.parts])


def _unmarked_part(part: Part) -> Part:
    if isinstance(part, ToolResult):
        return replace(part, cache=None, content=[_unmarked_item(i) for i in part.content])
    if isinstance(part, ToolCall) and part.cache is not None:
        return replace(part, cache=None)
    return _unmarked_item(part) if isinstance(part, Text | Image) else part


def _unmarked_item(item: Text | Image | Opaque) -> Text | Image | Opaque:
    if isinstance(item, Text | Image) and item.cache is not None:
        return replace(item, cache=None)
    return item


def procedure_of(request: Request) -> list[Text]:
    """P as a session's first request gives it: the system texts, then the texts of the
    system and developer messages that open the conversation (Codex sends its prompt as
    developer messages)."""
    texts = list(request.system)
    for message in request.messages:
        if message.role not in ("system", "developer"):
            break
        texts.extend(part for part in message.parts if isinstance(part, Text))
    return texts


@dataclass(frozen=True, slots=True)
class Observation:
    """O_t: the messages sent after Σ. ``is_instruction``: they are the newest user
    instruction itself (no tool loop has run), so the task slot would only repeat them."""

    messages: list[Message]
    is_instruction: bool = False


def observe(messages: Sequence[Message]) -> Observation:
    """O_t of a conversation (the module docstring gives the rule).

    Assistant messages at the very end (a prefill) are kept after the observation, verbatim;
    system and developer messages are left out (P stands for them).
    """
    end = len(messages)
    while end and messages[end - 1].role != "user" and messages[end - 1].role != "tool":
        end -= 1
    trailing = [m for m in messages[end:] if m.role == "assistant"]
    if not end:
        return Observation(trailing)
    last = messages[end - 1]
    if is_results(last):
        return Observation([*result_batch(messages, end), *trailing])
    if not _loop_before(messages, end - 1):
        return Observation([last, *trailing], is_instruction=True)
    stop = end - 1
    while stop and not is_results(messages[stop - 1]):
        stop -= 1
    batch = result_batch(messages, stop) if stop else []
    return Observation([*batch, *trailing])


def newest_instruction(messages: Sequence[Message]) -> str | None:
    """The text of the newest user message that is an instruction, its text parts joined by
    blank lines; ``None`` when there is none. A message of tool results is one only where
    its texts beside the results are the user's own words (Anthropic's wire sends the next
    instruction in the same message as the results it follows), not the context a host
    wraps around them (Claude Code's ``<system-reminder>`` blocks: ``sweep.CONTEXT_PREFIXES``)."""
    for message in reversed(messages):
        if message.role != "user":
            continue
        texts = [p.text for p in message.parts if isinstance(p, Text) and p.text.strip()]
        if is_results(message):
            said = [text for text in texts if not text.lstrip().startswith(CONTEXT_PREFIXES)]
            if said:
                return "\n\n".join(said)
        elif texts or any(isinstance(p, Image) for p in message.parts):
            return "\n\n".join(texts)
    return None


def is_results(message: Message) -> bool:
    """Whether ``message`` carries tool results: a ``tool`` message, or a user message with
    ``ToolResult`` parts (Anthropic) or of nothing but ``Opaque`` items (the outputs of hosted
    calls on the Responses wire), as ``turns`` reads them."""
    if message.role == "tool":
        return True
    if message.role != "user" or not message.parts:
        return False
    parts = message.parts
    return any(isinstance(p, ToolResult) for p in parts) or all(
        isinstance(p, Opaque) for p in parts
    )


def result_batch(messages: Sequence[Message], stop: int) -> list[Message]:
    """The tool-result batch ending at ``messages[stop - 1]`` with the assistant message(s)
    whose calls it answers, in order: the run of result messages, preceded by the run of
    assistant messages before it (one model turn, which some wires split in several). If a
    result answers a call made earlier than that, the batch reaches back to that call, so no
    result is ever sent without its call."""
    start = stop
    while start and is_results(messages[start - 1]):
        start -= 1
    first = start
    while first and messages[first - 1].role == "assistant":
        first -= 1
    answered = {
        p.call_id for m in messages[start:stop] for p in m.parts if isinstance(p, ToolResult)
    }
    missing = answered - _call_ids(messages[first:start])
    if missing:
        first = min(
            (i for i in range(first) if _call_ids([messages[i]]) & missing),
            default=first,
        )
    return list(messages[first:stop])


def _call_ids(messages: Sequence[Message]) -> set[str]:
    return {p.id for m in messages for p in m.parts if isinstance(p, ToolCall)}


def _loop_before(messages: Sequence[Message], index: int) -> bool:
    """Whether an assistant tool call comes before ``messages[index]``: a tool loop runs."""
    return any(
        m.role == "assistant" and any(isinstance(p, ToolCall) for p in m.parts)
        for m in messages[:index]
    )
