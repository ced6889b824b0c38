"""How one generation request is served, decided without I/O: a ``Route``.

``server.proxy.handle_generation`` reads the request (its body, its headers, the upstream that
serves its model, the conversation a ``previous_response_id`` names), asks ``admit`` whether the
lanes run, runs them, asks ``serve`` how the reply is made, and performs that. Both steps are
pure functions over plain values (``Arrival``, ``Ran``); each route is a frozen record built
whole. The lanes sit between the two because they are I/O (the state lane loads Σ, a lane's
archive writes are kept before anything goes on) and what they did decides the rest.

The rules, each kept on every path:

* A refusal never reaches an upstream and runs no lane: a body the gateway cannot read (the
  status ``server.inbound`` gave it), a model no upstream serves (502 when none is configured,
  else 404), a ``previous_response_id`` the gateway never kept (404, in the Responses API's own
  shape).
* A lane's answer (host compaction) is the client's reply: nothing goes upstream.
* The client's bytes are relayed only when the upstream speaks the client's wire, no lane
  changed the request, the upstream need not be asked differently, and no lane needs the
  round loop: a lane that follows up (the state lane) must have left the request as it came,
  and no fallback of another wire may have to serve it (relayed bytes cannot be translated,
  the round loop's can). A request no lane follows up is relayed even so: only its fallbacks
  of the same wire are tried.
* Asked differently means a Chat stream that did not ask for its usage: the round loop asks
  for it (``Adapter.for_upstream``) and its encoder sends the client only what it asked for.
  Never in mode ``off`` (a bypassed request included): off is a byte-exact pass-through
  (DESIGN.md, invariant 6), so the client's bytes go up as they came, the upstream's come back
  as they came, and where they hold no usage the ledger counts it itself (an estimate, and
  marked so).
* A request for the ChatGPT backend (Codex signed in with ChatGPT) whose rewrite that
  backend may refuse or misread (``Ran.unsafe``: ``openai_responses.chatgpt``) goes up as
  the client sent it, in mode ``off``: the pass-through fallback of an undocumented backend.
* Everything else runs the round loop (``server.turn``).
* A bypassed request (``x-skillstate-bypass``) runs in mode ``off``; ``x-skillstate-mode``
  chooses the mode otherwise (a name it does not know is ignored).
* A request made with an Anthropic subscription login (Claude Code's Pro/Max) runs no lane and
  is served in mode ``off``, as a bypassed one, unless the gateway was told to rewrite such
  traffic (``subscription_rewrite``): Anthropic allows that login for Claude Code and its own
  apps only, and its first system block carries a value computed over the body that a
  rewrite would invalidate. Every reply says which login the request carried
  (``x-skillstate-login``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from skillstate.conversation import ErrorKind, Wire
from skillstate.protocols.logins import Login
from skillstate.state.mode import Mode, parse_mode
from skillstate.support import jsonio

LOGIN_HEADER = "x-skillstate-login"
STATE_LANE = "state"
"""The lane whose handover round builds the turn's request anew: the lanes after it run again."""


@dataclass(frozen=True, slots=True)
class Refused:
    """Why reading the request failed, as ``server.inbound.Refusal`` said it."""

    status: int
    message: str
    kind: ErrorKind | None = None
    reason: str = "invalid_request"
    """The cause, as the log and ``/metrics`` name it (``server.local_answers``)."""


@dataclass(frozen=True, slots=True)
class Arrival:
    """What the gateway knows of a request before its lanes run, as plain values."""

    wire: Wire
    """The client's wire."""
    refused: Refused | None = None
    """Reading it failed: nothing else here was read."""
    model: str = ""
    session: tuple[str, str] = ("", "")
    """The session's id and where the id came from."""
    upstream: str | None = None
    """The upstream that serves the model; None: none does."""
    target: Wire | None = None
    """The wire that upstream speaks to this client (None without an upstream)."""
    configured: bool = True
    """Whether any upstream is configured at all."""
    unknown: str | None = None
    """A ``previous_response_id`` the gateway never kept."""
    bypass: bool = False
    mode: str | None = None
    """``x-skillstate-mode`` as sent."""
    default_mode: Mode = Mode.HYBRID
    lanes: tuple[str, ...] = ()
    """The lanes this request runs, in order (``server.inbound.chosen_lanes``)."""
    reshaped: bool = False
    """The round loop would ask the upstream differently from how the client asked
    (``Adapter.for_upstream``); a request in mode off never is."""
    fallbacks: tuple[Wire, ...] = ()
    """The wire each fallback of the upstream speaks to this client, in order."""
    size: int = 0
    """The client's body, in bytes."""
    history: bool = False
    """Whether the gateway keeps Responses replies for a later ``previous_response_id``."""
    login: Login = Login.NONE
    """The kind of credential the request carries (``protocols.logins``)."""
    subscription_rewrite: bool = False
    """The gateway rewrites an Anthropic subscription login's requests like any other."""


@dataclass(frozen=True, slots=True)
class Ran:
    """What the lanes did, as plain values (``PipelineResult``)."""

    summary: str = ""
    """``x-skillstate-lanes``: what each lane that did something did."""
    changed: bool = False
    answered: bool = False
    compaction: str | None = None
    """What the answering lane's report calls its compaction."""
    followup: bool = False
    """A lane (the state lane) needs the round loop, or at least its ``finish``."""
    untouched: bool = False
    """That lane left the request as it came."""
    handover: bool = False
    """That lane asks for a hidden round before the turn's own."""
    unsafe: tuple[str, ...] = ()
    """What in the request as the lanes left it its upstream's dialect may refuse or misread
    (the ChatGPT backend's rules); not empty: the client's bytes go up instead."""


@dataclass(frozen=True, slots=True)
class Refuse:
    """Answer with this error in the client's wire; nothing goes upstream."""

    status: int
    message: str
    kind: ErrorKind | None
    headers: Mapping[str, str]
    reason: str
    """The cause, as the log and ``/metrics`` name it (``server.local_answers``)."""


@dataclass(frozen=True, slots=True)
class Unknown:
    """A ``previous_response_id`` the gateway never kept: the Responses API's own 404."""

    response_id: str
    headers: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class RunLanes:
    """Run the request's lanes for ``target`` in ``mode``; then ``serve``."""

    target: Wire
    mode: Mode
    headers: Mapping[str, str]
    untouched: bool = False
    """No lane runs: the request's login is one the gateway does not rewrite."""


@dataclass(frozen=True, slots=True)
class Answered:
    """A lane answered the request itself: its reply is the client's, nothing goes upstream."""

    headers: Mapping[str, str]
    mode: Mode
    lanes: str


@dataclass(frozen=True, slots=True)
class Record:
    """What the request's ``Exchange`` starts with."""

    mode: Mode
    """The request's mode where a lane followed up, else off."""
    forwarded_original: bool
    """The request went up as the client sent it (same wire, unchanged)."""
    lanes: str


@dataclass(frozen=True, slots=True)
class Relay:
    """Forward the client's bytes and relay the upstream's as they come
    (``server.relay``)."""

    headers: Mapping[str, str]
    record: Record
    finish: bool
    """The following lane's ``finish`` commits what the reply means, once it is known."""


@dataclass(frozen=True, slots=True)
class Loop:
    """Encode the request as the lanes left it and serve it through the round loop
    (``server.turn``)."""

    headers: Mapping[str, str]
    record: Record
    rerun: tuple[str, ...]
    """The lanes to run again on the request a handover round leads to (after the state lane)."""
    big: bool
    """Write the upstream body in steps (``jsonio.dumps_cooperatively``)."""
    remember: bool
    """Keep the reply for a later ``previous_response_id`` (``server.history``)."""


Admission = Refuse | Unknown | RunLanes
Service = Answered | Relay | Loop
Route = Admission | Service


def mode_for(bypass: bool, asked: str | None, default: Mode) -> Mode:
    """The request's mode: off when bypassed, else the one ``x-skillstate-mode`` names, else
    the gateway's."""
    if bypass:
        return Mode.OFF
    return parse_mode(asked) or default


def expands(wire: Wire, target: Wire | None) -> bool:
    """Whether a ``previous_response_id`` is written out (where the gateway keeps replies)
    before the lanes run: only for an upstream of another wire; one of the same wire is given
    the reference untouched."""
    return target is not None and target is not wire


def admit(arrival: Arrival) -> Admission:
    """Refuse the request, or run its lanes."""
    if arrival.refused is not None:
        refused = arrival.refused
        said = {LOGIN_HEADER: arrival.login.value}
        return Refuse(refused.status, refused.message, refused.kind, said, refused.reason)
    headers = session_headers(arrival.session, arrival.upstream, arrival.login)
    if arrival.target is None:
        return _no_upstream(arrival, headers)
    if arrival.unknown is not None:
        return Unknown(arrival.unknown, headers)
    if arrival.target is not arrival.wire:
        headers["x-skillstate-translated"] = f"{arrival.wire.value}->{arrival.target.value}"
    untouched = untouched_login(arrival.login, arrival.subscription_rewrite)
    mode = mode_for(arrival.bypass or untouched, arrival.mode, arrival.default_mode)
    return RunLanes(arrival.target, mode, headers, untouched)


def untouched_login(login: Login, subscription_rewrite: bool) -> bool:
    """Whether a request with ``login`` passes through untouched: an Anthropic subscription
    login, unless the gateway rewrites such traffic by the user's explicit choice."""
    return login is Login.ANTHROPIC_SUBSCRIPTION and not subscription_rewrite


def serve(arrival: Arrival, run: RunLanes, ran: Ran) -> Service:
    """How the reply is made, once the lanes ran."""
    headers = dict(run.headers)
    if ran.summary:
        headers["x-skillstate-lanes"] = ran.summary
    if ran.answered:
        if ran.compaction:
            headers["x-skillstate-compaction"] = ran.compaction
        return Answered(headers, run.mode, ran.summary)
    if ran.unsafe and run.target is arrival.wire:
        headers["x-skillstate-mode"] = Mode.OFF.value
        return Relay(headers, Record(Mode.OFF, True, ran.summary), finish=False)
    if ran.followup:
        headers["x-skillstate-mode"] = run.mode.value
    as_asked = not arrival.reshaped or run.mode is Mode.OFF
    same = run.target is arrival.wire and not ran.changed and as_asked
    record = Record(run.mode if ran.followup else Mode.OFF, same, ran.summary)
    crossed = any(wire is not run.target for wire in arrival.fallbacks)
    relayable = not ran.followup or (ran.untouched and not crossed)
    if same and relayable:
        return Relay(headers, record, finish=ran.followup)
    return Loop(
        headers,
        record,
        rerun=later_lanes(arrival.lanes) if ran.followup and ran.handover else (),
        big=arrival.size >= jsonio.CUT_FROM,
        remember=arrival.wire is Wire.RESPONSES
        and run.target is not arrival.wire
        and arrival.history,
    )


def chatgpt_routed(wire: Wire, login: Login) -> bool:
    """Whether a request of ``wire`` with ``login`` goes to the ChatGPT backend: a Responses
    request (the only wire that backend speaks) with a ChatGPT login."""
    return wire is Wire.RESPONSES and login is Login.CHATGPT


def later_lanes(lanes: tuple[str, ...]) -> tuple[str, ...]:
    """The lanes after the state lane (none without it)."""
    return lanes[lanes.index(STATE_LANE) + 1 :] if STATE_LANE in lanes else ()


def session_headers(
    session: tuple[str, str], upstream: str | None, login: Login = Login.NONE
) -> dict[str, str]:
    """What a reply tells the client about its session (id, where the id came from), the
    kind of credential it came with and the upstream that serves it."""
    headers = {
        "x-skillstate-session": session[0],
        "x-skillstate-session-source": session[1],
        LOGIN_HEADER: login.value,
    }
    if upstream is not None:
        headers["x-skillstate-upstream"] = upstream
    return headers


def _no_upstream(arrival: Arrival, headers: dict[str, str]) -> Refuse:
    if not arrival.configured:
        message = "no upstream is configured; start the gateway with --upstream URL"
        return Refuse(502, message, ErrorKind.UPSTREAM, headers, "no_upstream")
    message = f"no configured upstream serves model {arrival.model!r}"
    return Refuse(404, message, ErrorKind.NOT_FOUND, headers, "model_not_served")
