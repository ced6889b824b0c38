"""The round loop of one client request, sans I/O: a reply goes in, the next step comes out.

The gateway may answer some of the model's tool calls itself (the internal tools, ``skill_state``
and ``recall``) and check a paper-mode envelope, continuing the turn upstream until the reply is
the client's again. This machine makes every decision of that loop; the server only performs
its steps (``Send``: post this request upstream; ``Answer``: answer these internal calls;
``Check``: apply this paper envelope; ``Done``: give the client this reply). JSON and stream
replies drive the same machine: a JSON reply goes in whole through ``replied``; a stream's
events go through ``view`` as they arrive, then ``ended``.

The rules, each kept on every path:

* The client only ever sees calls to its own tools. Internal calls are hidden from its stream
  and its JSON, whatever their order or parallelism.
* A reply holding only internal calls (and text) is answered and the turn continues, at most
  ``max_rounds`` more times; a reply that also calls the client's tools goes to the client at
  once (its internal calls still answered first).
* Paper mode: a JSON reply whose envelope is refused is retried with the correction note at
  most ``retries`` times; a streamed one is checked once, after it ended (its bytes are out).
  With ``answer_action`` (every paper request) the client gets the envelope's
  ``action`` as the reply's text, not the envelope: a stream's text is held and the action sent
  as one text part before ``Finish``. A reply that holds no envelope reaches it as it came.
* What the client saw is one reply: the visible parts of every round (JSON keeps the earlier
  rounds' text only), the usage summed over the rounds (unknown, None, when a round's provider
  reported none: a sum missing a part is not shown as the sum), and a stop reason that never
  says "tool calls" when none is shown.
* Every round's reply is ``Metered`` for the ledger: its usage, and where that is unknown, the
  request the round sent and the message that came back, for the ledger to count itself.
* Within a stream the client's ``Start`` goes out once; a loop that can answer internal calls
  holds it until the first visible event, so an upstream error in a hidden round can still be
  answered with its real HTTP status. The streamed reply is named by that ``Start`` (the
  first round's id and model), whichever round ends the turn.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass, field

from skillstate.conversation import (
    Accumulator,
    Delta,
    Event,
    Failure,
    Finish,
    Message,
    Part,
    PartEnd,
    PartStart,
    Request,
    Response,
    Start,
    StopReason,
    Text,
    ToolCall,
    ToolResult,
    Usage,
    Wire,
)
from skillstate.economics.metered import Metered, meter, total
from skillstate.state.envelope import Envelope, parse_envelope
from skillstate.state.tools import internal_tool
from skillstate.support import jsonio


@dataclass(frozen=True, slots=True)
class Send:
    """Post ``request`` upstream; its reply goes back into the machine."""

    request: Request


@dataclass(frozen=True, slots=True)
class Answer:
    """Answer these internal calls, then give the answers to ``Rounds.answered``."""

    calls: tuple[ToolCall, ...]


@dataclass(frozen=True, slots=True)
class Check:
    """Apply the paper envelope of ``response``; give the correction note (or None) back."""

    response: Response


@dataclass(frozen=True, slots=True)
class Done:
    """The turn is the client's: ``response`` is the reply as the client sees it."""

    response: Response


Step = Send | Answer | Check | Done


STATE_ROUND = "state"
"""A round sent to continue after the gateway answered the model's internal calls."""
RETRY_ROUND = "retry"
"""A round sent again with paper mode's correction."""


@dataclass(frozen=True, slots=True)
class Policy:
    """What the loop may do: the internal tool names it answers, how many extra rounds,
    paper mode's envelope check with its retries, and whether the client gets the envelope's
    action as its answer (``answer_action``)."""

    internal: frozenset[str] = frozenset()
    max_rounds: int = 4
    check: bool = False
    retries: int = 0
    answer_action: bool = False


@dataclass(slots=True)
class _Round:
    accumulator: Accumulator | None = None
    hidden: set[int] = field(default_factory=set)
    failed: Failure | None = None


class Rounds:
    """One client request's loop. Start with ``first()``; feed what each step asks for."""

    __slots__ = (
        "_action",
        "_finish",
        "_numbers",
        "_outbound",
        "_pending",
        "_policy",
        "_reply",
        "_retries",
        "_round",
        "_rounds",
        "_shown",
        "_start",
        "_started",
        "_stream",
        "_usage",
        "causes",
        "metered",
        "tools",
    )

    def __init__(
        self,
        request: Request,
        policy: Policy = Policy(),
        before: Sequence[tuple[Metered, str]] = (),
    ) -> None:
        """``before``: the reply and cause of rounds the turn sent before this loop (the
        handover, ``state.handover``), counted in the reply's usage."""
        self._policy = policy
        self._outbound = request
        self._stream = request.params.stream
        self._retries = policy.retries if policy.check and not self._stream else 0
        self._rounds = 0
        self._shown: list[Part] = []
        self.metered: list[Metered] = [metered for metered, _ in before]
        """Each round's reply as the ledger counts it, in order: one per upstream reply."""
        self.causes: list[str] = [cause for _, cause in before]
        """Why each round was sent, one per round in order: ``""`` for the client's request
        itself, ``state`` to continue after the gateway answered the model's internal calls,
        ``retry`` for paper mode's correction, ``handover`` for the handover round."""
        self.tools: dict[int, tuple[str, ...]] = {}
        """For each ``state`` round (by its index in ``causes``), which internal tools the
        gateway answered before sending it (``skill_state``, ``recall``), in call order."""
        self._usage: Usage | None = total(metered.usage for metered in self.metered)
        self._reply: Response | None = None
        self._pending: Response | None = None
        self._round = _Round()
        self._numbers: dict[tuple[int, int], int] = {}
        self._start: Start | None = None
        self._started = False
        self._finish: Finish | None = None
        self._action: str | None = None

    @property
    def rounds(self) -> int:
        """Upstream requests sent after the first."""
        return self._rounds

    @property
    def started(self) -> bool:
        """Whether any event went to the client's stream."""
        return self._started

    def first(self) -> Send:
        self.causes.append("")
        return Send(self._outbound)

    # --- streams --------------------------------------------------------------------------

    def view(self, event: Event) -> list[Event]:
        """``event`` of the current round's stream in; the events the client gets out, with
        internal parts hidden and parts numbered across rounds. ``Finish`` is held (``ended``
        decides whether the turn goes on); ``Failure`` passes and ends the round."""
        state = self._round
        if state.accumulator is None:
            raise RuntimeError("view() before begin()")
        state.accumulator.add(event)
        if isinstance(event, Start):
            if self._start is None:
                self._start = event
            return self._open() if not self._policy.internal else []
        if isinstance(event, PartStart):
            return self._part_start(event)
        if isinstance(event, Delta | PartEnd):
            known = self._numbers.get((self._rounds, event.index))
            if event.index in state.hidden or known is None:
                return []
            return [*self._open(), dataclasses.replace(event, index=known)]
        if isinstance(event, Failure):
            state.failed = event
            return [*self._open(), event]
        self._finish = event  # held until the loop knows the turn is over
        return []

    def begin(self, wire: Wire) -> None:
        """A round's stream of ``wire`` opens."""
        self._round = _Round(Accumulator(wire))

    def _part_start(self, event: PartStart) -> list[Event]:
        part = event.part
        hidden = isinstance(part, ToolCall) and part.name in self._policy.internal
        if hidden or (isinstance(part, Text) and self._answers_action):
            self._round.hidden.add(event.index)
            return []
        number = self._numbers.setdefault((self._rounds, event.index), len(self._numbers))
        return [*self._open(), PartStart(number, part)]

    def _open(self) -> list[Event]:
        if self._started:
            return []
        self._started = True
        return [self._start] if self._start is not None else []

    def ended(self) -> Step:
        """The current round's stream ended: the next step."""
        accumulator = self._round.accumulator
        if accumulator is None:
            raise RuntimeError("ended() without a round")
        if self._round.failed is not None:
            response = self._as_opened(accumulator.response())
            self._meter(response)
            response.message.parts = self._shown + self._visible(response.message.parts)
            response.usage = self._usage
            self._reply = response
            return Done(response)
        return self.replied(accumulator.response())

    def left(self) -> None:
        """The client left while the current round streamed: its reply so far is metered (a
        provider bills a reply cut short for what it made of it: the ledger and a key's
        budget count that, never nothing and never the most it might have cost)."""
        accumulator = self._round.accumulator
        if accumulator is not None:
            self._meter(accumulator.response())
            self._round = _Round()

    def closing(self, usage: Usage | None = None) -> list[Event]:
        """After ``Done`` on a stream: the events that end the client's stream (the held
        ``Start`` when nothing was shown yet, and ``Finish`` with the summed usage, or with
        ``usage`` where that is unknown: what the client's wire requires instead); none
        after a failure, which ended it already."""
        if self._round.failed is not None or self._reply is None:
            return []
        reply = self._reply
        last = self._finish or Finish(reply.stop_reason)
        action: list[Event] = []
        if self._action:  # an empty text part would be refused when the client sends it back
            index = len(self._numbers)
            action = [PartStart(index, Text("")), Delta(index, self._action), PartEnd(index)]
        return [
            *self._open(),
            *action,
            dataclasses.replace(
                last,
                stop_reason=reply.stop_reason,
                usage=reply.usage if reply.usage is not None else usage,
            ),
        ]

    # --- every reply ----------------------------------------------------------------------

    def replied(self, response: Response) -> Step:
        """A round's whole reply (a JSON body, or a stream that ended): the next step."""
        self._meter(response)
        self._pending = response
        internal = tuple(
            p for p in response.message.parts if isinstance(p, ToolCall) and self._internal(p)
        )
        if internal:
            return Answer(internal)
        return self._after_answers(response, [])

    def _meter(self, response: Response) -> None:
        """Keep the round's usage, and where it is unknown what the ledger counts instead:
        the request this round sent and the reply as it came."""
        self.metered.append(meter(response.usage, self._outbound, response.message))
        self._usage = total((self._usage, response.usage))

    def answered(self, answers: Sequence[tuple[ToolCall, str]]) -> Step:
        """The internal calls' answers, in the order ``Answer`` listed them."""
        response = self._pending
        if response is None:
            raise RuntimeError("answered() without a pending reply")
        return self._after_answers(response, list(answers))

    def _after_answers(self, response: Response, answers: list[tuple[ToolCall, str]]) -> Step:
        visible = self._visible(response.message.parts)
        client_calls = any(isinstance(p, ToolCall) for p in visible)
        if answers and not client_calls and self._rounds < self._policy.max_rounds:
            if self._stream:
                self._shown += visible
            else:
                self._shown += [p for p in visible if isinstance(p, Text) and p.text]
            self._outbound = _continued(self._outbound, response.message.parts, answers)
            self._rounds += 1
            self.tools[len(self.causes)] = tuple(internal_tool(call.name) for call, _ in answers)
            self.causes.append(STATE_ROUND)
            return Send(self._outbound)
        if self._policy.check:
            return Check(response)
        return self._done(response)

    def checked(self, note: str | None) -> Step:
        """The paper envelope's verdict: None when it was applied, else the correction."""
        response = self._pending
        if response is None:
            raise RuntimeError("checked() without a pending reply")
        if note is not None and self._retries > 0:
            self._retries -= 1
            self._outbound = _corrected(self._outbound, response.message.parts, note)
            self.causes.append(RETRY_ROUND)
            return Send(self._outbound)
        if self._answers_action:
            return self._done(self._as_action(response))
        return self._done(response)

    @property
    def _answers_action(self) -> bool:
        return self._policy.check and self._policy.answer_action

    def _as_action(self, response: Response) -> Response:
        """``response`` with its text replaced by its envelope's action (a string as it is,
        any other JSON value as JSON text); as it is when its text holds no envelope, its
        text then still owed to a stream (``closing`` sends it)."""
        parts = response.message.parts
        text = "".join(p.text for p in parts if isinstance(p, Text))
        envelope = parse_envelope(text)
        if isinstance(envelope, Envelope):
            action = envelope.action
            text = action if isinstance(action, str) else jsonio.dumps_str(action)
        if self._stream:
            self._action = text
        if not isinstance(envelope, Envelope):
            return response
        others = [p for p in parts if not isinstance(p, Text)]
        message = dataclasses.replace(response.message, parts=[*others, Text(text)])
        return dataclasses.replace(response, message=message)

    def _done(self, response: Response) -> Done:
        reply = dataclasses.replace(
            response,
            message=dataclasses.replace(
                response.message,
                parts=self._shown + self._visible(response.message.parts),
            ),
            usage=self._usage,
        )
        reply = self._as_opened(reply)
        if reply.stop_reason is StopReason.TOOL_CALLS and not any(
            isinstance(p, ToolCall) for p in reply.message.parts
        ):
            reply.stop_reason = StopReason.END
        self._reply = reply
        return Done(reply)

    def _as_opened(self, response: Response) -> Response:
        """On a stream, ``response`` under the id and model the client's reply goes by: its
        one ``Start``'s, the first round's, whichever round ends the turn (a later
        ``previous_response_id`` names it)."""
        start = self._start
        if not self._stream or start is None:
            return response
        return dataclasses.replace(response, id=start.id, model=start.model)

    def _visible(self, parts: list[Part]) -> list[Part]:
        return [p for p in parts if not (isinstance(p, ToolCall) and self._internal(p))]

    def _internal(self, call: ToolCall) -> bool:
        return call.name in self._policy.internal


def _continued(request: Request, reply: list[Part], answers: list[tuple[ToolCall, str]]) -> Request:
    """The request again, with the model's reply and the answers to its internal calls (the
    loop continues only when every call in the reply was internal, so each has its result)."""
    results = [Message("tool", [ToolResult(call.id, [Text(text)])]) for call, text in answers]
    messages = [*request.messages, Message("assistant", list(reply)), *results]
    return dataclasses.replace(request, messages=messages)


def _corrected(request: Request, reply: list[Part], note: str) -> Request:
    texts: list[Part] = [p for p in reply if isinstance(p, Text)] or [Text("")]
    messages = [*request.messages, Message("assistant", texts), Message("user", [Text(note)])]
    return dataclasses.replace(request, messages=messages)
