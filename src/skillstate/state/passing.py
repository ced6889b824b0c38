"""The sessions hybrid mode passes through before their first boundary, as this process knows
them: a request of such a session that cannot start a boundary is relayed undecoded
(``server.express``) and the state lane catches up on it at the session's next request it
reads.

Until a session's first boundary the state lane sends its requests as they came
(``CollapseOptions.passthrough_until_boundary``); what it does besides is bookkeeping: the
step counted, the decision that no boundary pays yet, the seed of Σ from the tool calls. A
boundary needs at least ``min_turns`` turns (unless forced), and a request's turns are never
more than its messages, so a request of fewer messages than that cannot start one: the lane
would leave it as it came. For such a request of a session this process saw passed through
(the engine's last decision for it: no epoch, nothing forced, no handover), the relay counts
the step here, and the next request the lane reads adds the steps counted here to the
store's and seeds Σ from its whole history, which holds every tool call the relayed requests
carried (the seed only adds, and reads the whole window before a boundary).

A subagent's request under its parent's session id, which the lane would leave uncounted
(``StateEngine._subagent`` needs the decoded request), is counted here like the parent's; where
Σ keeps a ``step`` (the default schema) the catch-up sets the step from the history anyway.

What this process knows is all it goes by: a session's first request, one after a restart,
or one whose entry was pushed out of memory is read by the lane. Several processes serving
one session would each keep their own, so a shared store keeps none: every request is the
lane's (``StateEngine(shared=True)``).
"""

from __future__ import annotations

from dataclasses import dataclass

from skillstate.support.caches import SessionCache


@dataclass(slots=True)
class _Passed:
    step: int
    """The session's step, the requests relayed since the lane last read one counted."""
    relayed: int
    """Requests relayed since the lane last read one of the session."""
    held: bool = False
    """The session's next request is the lane's (a boundary was asked for)."""


class Passing:
    """The sessions passed through before their first boundary, each with its step."""

    def __init__(self, *, entries: int, min_turns: int) -> None:
        self._sessions: SessionCache[_Passed] = SessionCache(
            entries=entries, max_bytes=entries, weigh=lambda _: 1
        )
        self._min_turns = min_turns

    def passes(self, session: str, messages: int) -> bool:
        """Whether a hybrid request of ``session`` holding at most ``messages`` messages
        (system prompt included) would be sent as it came, with nothing to do but count its
        step: the session is passed through, and the request cannot reach ``min_turns``."""
        if messages >= self._min_turns:
            return False
        passed = self._sessions.get(session)
        return passed is not None and not passed.held

    def relayed(self, session: str) -> int:
        """Count a request of ``session`` relayed as ``passes`` allowed: its step."""
        passed = self._sessions.get(session)
        assert passed is not None, "relayed without passes"
        passed.step += 1
        passed.relayed += 1
        return passed.step

    def relayed_since(self, session: str) -> int:
        """Requests of ``session`` relayed since the lane last read one."""
        passed = self._sessions.get(session)
        return 0 if passed is None else passed.relayed

    def taken(self, session: str) -> int:
        """The lane reads a request of ``session``: how many were relayed since it last did
        (their steps and seed are its to catch up on). Until ``kept`` again, the session's
        requests are the lane's."""
        passed = self._sessions.pop(session)
        return 0 if passed is None else passed.relayed

    def kept(self, session: str, step: int) -> None:
        """The lane passed ``session``'s request through, before any boundary, at ``step``."""
        self._sessions.put(session, _Passed(step, 0))

    def hold(self, session: str) -> None:
        """``session``'s next request is the lane's (a boundary asked for), which catches up
        on those relayed before it."""
        passed = self._sessions.get(session)
        if passed is not None:
            passed.held = True

    def forget(self, session: str) -> None:
        """Nothing relayed of ``session`` is left to catch up on (it was reset)."""
        self._sessions.pop(session)
