"""Segmenting a canonical conversation into turns: the units collapse may cut between.

A **turn** (DESIGN.md, "Invariants") is one step of the conversation:

* a ``user`` turn: one user message that carries no tool result;
* an ``assistant`` turn: one assistant message together with the results of the tool calls it
  made, wherever they sit: ``tool`` messages (one per result, as Chat and Responses send them)
  or ``ToolResult`` parts of a user message (as Anthropic sends them), parallel batches
  included. A turn reaches as far as its last result, so anything between a call and its
  result (another assistant message, a note) is inside the turn too;
* a ``results`` turn: results that no earlier turn reaches, because no call before them made
  them (a malformed or pre-trimmed history); collapse never cuts just before one;
* an ``instruction`` turn: a conversation of nothing but system or developer messages.

System and developer messages are never a turn of their own where there is a turn to join
(so ``keep_recent_turns`` counts steps, not notes): in the middle of a conversation they
belong to the turn they precede, since an instruction given before a step is read with that
step and the two are kept or collapsed together; at the very end, where no turn follows yet,
they belong to the turn they follow, the newest one, which collapse always keeps. After a
turn's results, the messages that only continue it (more tool
messages, a user message of results, a user message of nothing but ``Opaque`` items, which on
the Responses wire carry the outputs of hosted calls) are part of it as well.

A turn is **open** when one of its calls has no result anywhere after it: the client has not
answered it yet. Collapse never cuts after an open turn.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from skillstate.conversation import (
    Message,
    Opaque,
    ToolCall,
    ToolResult,
)
from skillstate.conversation.prefixes import PrefixMemo
from skillstate.economics.tokenizer import message_tokens

TurnKind = Literal["user", "assistant", "results", "instruction"]

_INSTRUCTION_ROLES = ("system", "developer")


@dataclass(frozen=True, slots=True)
class Turn:
    """One turn: messages ``start`` to ``end`` (exclusive) of the conversation.

    ``calls`` are the ids of the tool calls made in the turn and ``results`` the ids its tool
    results answer, in order. ``first_user`` marks the session's first user instruction.
    """

    index: int
    start: int
    end: int
    kind: TurnKind
    tokens: int
    calls: tuple[str, ...] = ()
    results: tuple[str, ...] = ()
    open: bool = False
    first_user: bool = False

    @property
    def span(self) -> range:
        """The indexes of the turn's messages."""
        return range(self.start, self.end)

    @property
    def pending(self) -> frozenset[str]:
        """Ids of the calls in this turn that still wait for their result."""
        return frozenset(self.calls) - frozenset(self.results)


def newest_reply(messages: Sequence[Message]) -> int:
    """The index of the newest assistant message (-1: none), found from the end."""
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "assistant":
            return index
    return -1


def segment(
    messages: Sequence[Message], *, count: Callable[[Message], int] | None = None
) -> list[Turn]:
    """Split ``messages`` into consecutive turns covering every message, in order.

    ``count`` gives a message's tokens (``message_tokens`` unless given). With the default
    count, a conversation that extends one segmented before (the same message objects first,
    as a re-sent history is: ``protocols.memo``) is segmented from its last turns on only
    (``_resumed``); the result is the same as segmenting it whole.
    """
    if count is not None:
        return _segment(messages, count, [], 0)
    kept, start = _resumed(messages)
    turns = _segment(messages, message_tokens, kept, start)
    _remember(messages, turns)
    return turns


def _segment(
    messages: Sequence[Message], counter: Callable[[Message], int], turns: list[Turn], start: int
) -> list[Turn]:
    """The turns of ``messages`` from ``start`` on, after ``turns`` (those before it)."""
    last_result = _last_results(messages, start)
    turns = list(turns)
    seen_user = any(t.first_user for t in turns)
    while start < len(messages):
        head = _after_instructions(messages, start)
        if head == len(messages) and turns:
            turns[-1] = _extended(turns[-1], messages[start:], counter)
            break
        if head == len(messages):
            kind: TurnKind = "instruction"
            end = head
        else:
            kind = _kind(messages[head])
            end = _turn_end(messages, head, last_result)
        span = messages[start:end]
        first_user = kind == "user" and not seen_user
        seen_user = seen_user or first_user
        calls = tuple(p.id for m in span for p in m.parts if isinstance(p, ToolCall))
        results = tuple(p.call_id for m in span for p in m.parts if isinstance(p, ToolResult))
        turns.append(
            Turn(
                index=len(turns),
                start=start,
                end=end,
                kind=kind,
                tokens=sum(counter(m) for m in span),
                calls=calls,
                results=results,
                open=not set(calls) <= set(results),
                first_user=first_user,
            )
        )
        start = end
    return turns


def _extended(turn: Turn, trailing: Sequence[Message], count: Callable[[Message], int]) -> Turn:
    """``turn`` followed by the ``trailing`` instructions that end the conversation."""
    tokens = turn.tokens + sum(count(m) for m in trailing)
    return replace(turn, end=turn.end + len(trailing), tokens=tokens)


def _last_results(messages: Sequence[Message], start: int = 0) -> dict[str, int]:
    """For each call id, the index of the last message from ``start`` on holding a result for
    it (a result before its call never moves a turn's end, so earlier ones do not matter to
    the turns from ``start``)."""
    last: dict[str, int] = {}
    for i in range(start, len(messages)):
        for part in messages[i].parts:
            if isinstance(part, ToolResult):
                last[part.call_id] = i
    return last


# --- resuming a segmentation -----------------------------------------------------------------

_KEPT_BACK = 2
"""Turns at the end of a remembered segmentation that are always segmented again: the last
one may grow (trailing instructions, results that come later) and the one before it is kept
out too, so that trailing instructions that now precede a new turn are re-read with it."""


@dataclass(frozen=True, slots=True)
class _Segmented:
    turns: tuple[Turn, ...]
    calls: dict[str, int]
    """Each call id of the conversation, with the index of the turn that made it."""


_segmented: PrefixMemo[_Segmented] = PrefixMemo()


def _resumed(messages: Sequence[Message]) -> tuple[list[Turn], int]:
    """The turns of a remembered segmentation that ``messages`` leaves as they were, and the
    message they end at: the conversation must start with the same message objects, and no
    new message may hold a result for a call of a kept turn (that would move its end)."""
    found = _segmented.find(messages)
    if found is None:
        return [], 0
    covered, done = found
    keep = max(0, len(done.turns) - _KEPT_BACK)
    for message in messages[covered:]:
        for part in message.parts:
            if isinstance(part, ToolResult) and part.call_id in done.calls:
                keep = min(keep, done.calls[part.call_id])
    if keep == 0:
        return [], 0
    return list(done.turns[:keep]), done.turns[keep].start


def _remember(messages: Sequence[Message], turns: list[Turn]) -> None:
    calls: dict[str, int] = {}
    for turn in turns:  # a repeated id: its first turn is the one a late result extends
        for call in turn.calls:
            calls.setdefault(call, turn.index)
    _segmented.keep(messages, _Segmented(tuple(turns), calls))


def _after_instructions(messages: Sequence[Message], start: int) -> int:
    i = start
    while i < len(messages) and messages[i].role in _INSTRUCTION_ROLES:
        i += 1
    return i


def _kind(message: Message) -> TurnKind:
    if message.role == "assistant":
        return "assistant"
    return "results" if _continues(message) else "user"


def _continues(message: Message) -> bool:
    """Whether ``message`` carries results (or hosted outputs) of an earlier turn."""
    if message.role == "tool":
        return True
    if message.role != "user" or not message.parts:
        return False
    parts = message.parts
    return any(isinstance(p, ToolResult) for p in parts) or all(
        isinstance(p, Opaque) for p in parts
    )


def _turn_end(messages: Sequence[Message], head: int, last_result: dict[str, int]) -> int:
    """One past the last message of the turn whose first non-instruction message is ``head``."""
    end = head + 1
    scanned = head
    while True:
        # A call's result may come later than the next message: reach it, then keep scanning
        # what was reached, since it may hold calls of its own.
        while scanned < end:
            for part in messages[scanned].parts:
                if isinstance(part, ToolCall):
                    end = max(end, last_result.get(part.id, scanned) + 1)
            scanned += 1
        if end < len(messages) and _continues(messages[end]):
            end += 1
            continue
        return end
