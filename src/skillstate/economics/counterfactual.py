"""What a request would have cost without the gateway: the pass-through counterfactual.

For every client request the ledger also estimates the input a pass-through would have sent
(the client's own request), and how much of it the provider's prompt cache would have served.
The estimate is labelled as one everywhere; this module is its whole rule.

The client's request is seen as blocks, in the order a provider reads them: one head (system
prompt and tool definitions), then one block per message. Each block has a running hash (of
everything up to it) and the local token count up to its end (``tokenizer.count_request``'s
figures, so the totals agree). The cache a pass-through would have had, per session:

* automatic (OpenAI's wires): the common prefix with the session's previous client request,
  counted in whole 128-token steps from 1,024 tokens;
* explicit (Anthropic's): only prefixes that end at the client's own ``cache_control``
  breakpoints. A breakpoint reads the longest prefix written before that ends at most 20
  blocks before it; the last breakpoint writes what lies past the read, at the write premium
  (the 1 h rate when its marker asks for one hour). Entries live five minutes (or an hour),
  refreshed when read.

Local counts become provider counts by one ratio per request (``calibration``): what the
provider reported for the first upstream call over the local count of what was sent in it.

These are the wires' documented rules; whether a provider really follows its wire's is told
by ``cache_evidence``, which the recorder feeds with the same rule applied to what the gateway
sent and with what the provider reported.
"""

from __future__ import annotations

import time
from array import array
from collections.abc import Callable
from dataclasses import dataclass

from skillstate.conversation import CacheMark, Image, Message, Request, Text, ToolCall, ToolResult
from skillstate.conversation.prefixes import PrefixMemo
from skillstate.economics import tokenizer
from skillstate.support.caches import SessionCache

AUTOMATIC_MIN = 1_024
AUTOMATIC_STEP = 128
AUTOMATIC_TTL = 600.0
EXPLICIT_MIN = 1_024
LOOKBACK = 20
TTL = {None: 300.0, "5m": 300.0, "1h": 3600.0}


@dataclass(frozen=True, slots=True)
class Blocks:
    """A request as a prefix cache sees it."""

    chain: array[int]
    """The running hash after each block."""
    ends: array[int]
    """Local tokens up to the end of each block."""
    marks: tuple[tuple[int, float], ...]
    """(block, seconds its entry lives) for each block that ends with a client breakpoint."""
    opening: int = 1
    """How many blocks are the head: the tools and system prompt, and the system or developer
    messages that open the conversation (Chat and Responses send the system prompt so)."""

    @property
    def total(self) -> int:
        return self.ends[-1] if self.ends else 0


def blocks_of(request: Request, memo: PrefixMemo[Blocks] | None = None) -> Blocks:
    """``request``'s blocks; a breakpoint inside a message counts at the message's end. The
    blocks of messages an earlier request of the conversation had (the same objects) are
    taken from it (``conversation.prefixes``), when its head was the same. ``memo`` keeps
    them (None: the one for clients' requests; the requests the gateway sent keep theirs in
    another, so that the two never push each other out)."""
    memo = _earlier if memo is None else memo
    running = hash(("head", request.model))
    head, head_marks = tokenizer.head(request)
    running = hash((running, *head))
    found = memo.find(request.messages)
    marks: list[tuple[int, float]] = [(0, _ttl(head_marks))] if head_marks else []
    if found is not None and found[1].chain[0] == running:
        covered, earlier = found
        chain, ends = earlier.chain[: covered + 1], earlier.ends[: covered + 1]
        marks += [mark for mark in earlier.marks if 1 <= mark[0] <= covered]
        running = chain[-1]
    else:
        covered, chain, ends = 0, array("q", [running]), array("q", [head[1]])
    for message in request.messages[covered:]:
        key, tokens = tokenizer.message_key(message)
        running = hash((running, message.role, *key))
        chain.append(running)
        ends.append(ends[-1] + tokens)
        placed = _marks(message)
        if placed:
            marks.append((len(chain) - 1, _ttl(placed)))
    opening = 1
    for message in request.messages:
        if message.role not in ("system", "developer"):
            break
        opening += 1
    blocks = Blocks(chain, ends, tuple(marks), opening)
    memo.keep(request.messages, blocks)
    return blocks


_earlier: PrefixMemo[Blocks] = PrefixMemo()
"""The blocks of each conversation's latest request, by its messages."""


def _marks(message: Message) -> list[CacheMark]:
    return [
        part.cache
        for part in message.parts
        if isinstance(part, Text | Image | ToolCall | ToolResult) and part.cache is not None
    ]


def _ttl(marks: list[CacheMark]) -> float:
    return max(TTL.get(mark.ttl, TTL[None]) for mark in marks)


@dataclass(frozen=True, slots=True)
class Cached:
    """A pass-through's input as the provider would have billed it, in provider tokens."""

    input: int
    cached: int = 0
    written: int = 0
    written_1h: int = 0


def calibration(reported_input: int, local_sent: int) -> float:
    """Provider tokens per local token, from the first upstream call (1 when unknown)."""
    if reported_input <= 0 or local_sent <= 0:
        return 1.0
    return reported_input / local_sent


class PassThroughCache:
    """Per session, what a pass-through's requests would have left in the provider's cache.
    Bounded to ``sessions`` sessions and to about ``max_bytes`` for each of its two tables
    (least recently used go first); a session forgotten is estimated as a cold cache."""

    def __init__(
        self,
        sessions: int = 1024,
        clock: Callable[[], float] = time.time,
        *,
        max_bytes: int = 2 * 1024 * 1024,
    ) -> None:
        self._clock = clock
        # The previous request's chain of hashes alone is what the next one is compared with
        # (its token ends and marks are the new request's to read): half a Blocks' weight.
        self._previous: SessionCache[tuple[array[int], float]] = SessionCache(
            entries=sessions, max_bytes=max_bytes, weigh=_chain_weight
        )
        self._entries: SessionCache[dict[int, tuple[int, float]]] = SessionCache(
            entries=sessions, max_bytes=max_bytes, weigh=_entries_weight
        )

    def estimate(
        self,
        session: str,
        blocks: Blocks,
        *,
        explicit: bool,
        ratio: float,
        at: float | None = None,
    ) -> Cached:
        """The pass-through's billing of ``blocks`` now (or ``at``, a time of the clock's
        past), remembered for the session's next."""
        now = self._clock() if at is None else at
        total = round(blocks.total * ratio)
        previous = self._previous.get(session)
        self._previous.put(session, (blocks.chain, now))
        if explicit:
            return self._explicit(session, blocks, ratio, now, total)
        if previous is None or now - previous[1] > AUTOMATIC_TTL:
            return Cached(total)
        common = common_prefix(previous[0], blocks.chain)
        cached = round(blocks.ends[common - 1] * ratio) if common else 0
        cached = cached // AUTOMATIC_STEP * AUTOMATIC_STEP if cached >= AUTOMATIC_MIN else 0
        return Cached(total, min(cached, total))

    def previous(self, session: str) -> tuple[array[int], float] | None:
        """The session's previous request (its chain of hashes, when it was sent), as the next
        ``estimate`` compares with it (None: none kept)."""
        return self._previous.get(session)

    def _explicit(
        self, session: str, blocks: Blocks, ratio: float, now: float, total: int
    ) -> Cached:
        entries = {
            chain: entry
            for chain, entry in (self._entries.get(session) or {}).items()
            if entry[1] > now
        }
        read_end = -1
        for block, _ in blocks.marks:
            for back in range(block, max(-1, block - LOOKBACK - 1), -1):
                if blocks.chain[back] in entries:
                    read_end = max(read_end, back)
                    break
        read = round(blocks.ends[read_end] * ratio) if read_end >= 0 else 0
        read = read if read >= EXPLICIT_MIN else 0
        written = written_1h = 0
        if blocks.marks:
            last, ttl = blocks.marks[-1]
            upto = round(blocks.ends[last] * ratio)
            if upto >= EXPLICIT_MIN:
                written = max(0, upto - read)
                written_1h = written if ttl > TTL[None] else 0
            for block, block_ttl in blocks.marks:
                entries[blocks.chain[block]] = (block, now + block_ttl)
        if read_end >= 0:
            entry_block, expires = entries[blocks.chain[read_end]]
            entries[blocks.chain[read_end]] = (entry_block, max(expires, now + TTL[None]))
        self._entries.put(session, entries)
        return Cached(total, min(read, total), written, written_1h)


def _chain_weight(kept: tuple[array[int], float]) -> int:
    """An 8-byte hash a block (arrays grown by appending hold up to an eighth more), and the
    objects around them."""
    return 256 + 9 * len(kept[0])


def _entries_weight(entries: dict[int, tuple[int, float]]) -> int:
    return 232 + 160 * len(entries)


def common_prefix(left: array[int], right: array[int]) -> int:
    """How many leading blocks two chains of hashes share. The hashes run over everything
    before them, so once two differ every later pair does: a binary search finds the end."""
    low, high = 0, min(len(left), len(right))
    while low < high:
        middle = (low + high + 1) // 2
        if left[middle - 1] == right[middle - 1]:
            low = middle
        else:
            high = middle - 1
    return low
