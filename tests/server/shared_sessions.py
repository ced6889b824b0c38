"""One hybrid session served by several gateways on one store: the model that patches Σ at
every step, and the checks that what each gateway sent belongs to one epoch and carries the
stored Σ (``test_shared_hybrid``: instances in one process; ``test_separate_instances``:
processes)."""

from __future__ import annotations

import asyncio
import itertools
import re
from pathlib import Path
from typing import Any

from skillstate.conversation import Json, Text
from skillstate.protocols import adapter
from skillstate.state.handover import HANDOVER_HEADING
from skillstate.state.merge import merge
from skillstate.support import jsonio
from skillstate.testing import RecordedRequest, Reply, ScriptedCall
from skillstate.testing.session_view import tool_names

STEP = re.compile(r"call_(\d+)")
SIGMA = "Session state Σ"
_BLOCK = re.compile(r"```json\n(.*?)\n```", re.DOTALL)
_CHANGES = "Σ changes since the state message"
LIMITED = "limited-model"
"""The model ``gateway_config``'s rate-limited upstream serves (``rpm = RPM``); every other
goes to one without a limit."""
RPM = 3
LANES = ("--lanes", "compaction,state")
"""The lanes of ``gateway_config``'s gateways, as a flag (a config file takes them as tables)."""


def gateway_config(path: Path, *, store: str, redis: str, upstream: str, limited: str) -> Path:
    """A config file (written to ``path``) for gateway processes sharing ``store`` and
    ``redis``, in front of ``upstream``: ``LIMITED`` through an upstream named ``limited`` that
    takes ``RPM`` requests a minute, every other model through one without a limit; hybrid that
    may collapse after two turns, keeping the last two (with ``LANES``)."""
    tables: list[dict[str, Any]] = [
        {"name": limited, "rpm": RPM, "models": [LIMITED]},
        {"name": "default", "models": ["*"]},
    ]
    text = f'store = "{store}"\nredis = "{redis}"\nretries = 0\n'
    text += "[collapse]\nmin_turns = 2\nkeep_recent_turns = 2\n"
    for table in tables:
        text += f'[[upstreams]]\nbase_url = "{upstream}"\nprofile = "openai"\n'
        text += "".join(f"{key} = {jsonio.dumps_str(value)}\n" for key, value in table.items())
    path.write_text(text)
    return path


def noting(request: RecordedRequest) -> Reply:
    """Paper mode's model: notes the newest step it observed in Σ, in the envelope."""
    step = max((int(n) for n in STEP.findall(request.body.decode())), default=-1)
    patch = {"findings": {f"step-{step}": f"seen at step {step}"}}
    return Reply(text=jsonio.dumps_str({"state_patch": patch, "action": f"noted {step}"}))


def listed(body: dict[str, Any]) -> list[Any]:
    """A body's conversation: ``input`` on Responses, ``messages`` on the others."""
    items: list[Any] = body["input"] if "input" in body else body["messages"]
    return items


class PatchingModel:
    """The model: writes Σ when handed over; once offered ``skill_state``, patches it with the
    newest step it observed (call ``call_s<step>``, once a step), then says it is done.

    ``hold_step``: the first request of that step is answered with text, then a patch, held
    after the text's first pieces until ``release`` (``holding`` says it got there).
    ``hold_handover``: the handover round's answer is held so, whole."""

    def __init__(self, *, hold_step: int | None = None, hold_handover: bool = False) -> None:
        self.hold_step = hold_step
        self.hold_handover = hold_handover
        self.holding = asyncio.Event()
        self.release = asyncio.Event()

    def __call__(self, request: RecordedRequest) -> Reply:
        text = request.body.decode()
        step = max((int(n) for n in STEP.findall(text)), default=-1)
        if HANDOVER_HEADING in text:
            patch = {"findings": {"handover": f"at step {step}"}}
            return Reply(text=jsonio.dumps_str(patch), hold=self._held(self.hold_handover))
        call = f"call_s{step}"
        if "skill_state" not in tool_names(request) or call in text:
            return Reply(text="Done.")
        patch = {"findings": {f"step-{step}": f"seen at step {step}"}}
        calls = [ScriptedCall("skill_state", {"patch": patch}, id=call)]
        if step == self.hold_step and not self.holding.is_set():
            said = f"Working on step {step} now, reading what it printed."
            return Reply(text=said, calls=calls, hold=self._held(True), hold_after=3)
        return Reply(calls=calls)

    def _held(self, hold: bool) -> asyncio.Event | None:
        if not hold or self.holding.is_set():
            return None
        self.holding.set()
        return self.release


def check_one_epoch(by_step: list[list[RecordedRequest]], boundary: int) -> None:
    """The requests of each step from ``boundary`` on (the last two of each: the step's, then
    the round after the model's patch) are one epoch's: each holds the one before it, up to its
    newest message (the next step's, and the round after the patch; the next step's does not
    hold that round, the gateway's own, hidden from the client), and the rest of the body
    (system, tools) is the same throughout."""
    rounds = [[jsonio.loads(r.body) for r in sent[-2:]] for sent in by_step[boundary:]]
    firsts = [first for first, _ in rounds]
    for earlier, later in [*itertools.pairwise(firsts), *rounds]:
        before, now = listed(earlier), listed(later)
        assert now[: len(before) - 1] == before[:-1]
    after = [body for pair in rounds for body in pair]
    rest = [{k: v for k, v in body.items() if k not in ("messages", "input")} for body in after]
    assert all(each == rest[0] for each in rest)
    assert SIGMA in jsonio.dumps_str(listed(after[-1]))


def carried(recorded: RecordedRequest) -> tuple[Json, Json]:
    """The Σ snapshot a hybrid request's Σ message holds, and Σ as the request carries it: the
    snapshot with the tail note's changes merged in."""
    assert recorded.wire is not None
    messages = adapter(recorded.wire).decode_request(jsonio.loads(recorded.body)).messages
    texts = [p.text for m in messages for p in m.parts if isinstance(p, Text)]
    (sigma,) = [t for t in texts if SIGMA in t]
    snapshot = jsonio.loads(_BLOCK.findall(sigma)[-1])
    changes = [jsonio.loads(_BLOCK.findall(t)[-1]) for t in texts if _CHANGES in t]
    state = snapshot
    for change in changes[-1:]:
        state = merge(state, change)
    return snapshot, state
