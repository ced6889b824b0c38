"""The properties every long hybrid session must have, checked on a finished ``HybridRun``
(each check names the request that broke it)."""

from __future__ import annotations

from itertools import pairwise

from sessions_support import HybridRun

from skillstate.conversation import Wire
from skillstate.economics.tokenizer import count_tokens
from skillstate.testing.session_checks import (
    INTERNAL_TOOLS,
    SIGMA_PREFIX,
    epoch_of,
    messages_of,
    prefix_break,
    unpaired,
)

#: Anthropic's limit on ``cache_control`` breakpoints in one request.
MAX_BREAKPOINTS = 4


def check_size(run: HybridRun, bound: int, *, ratio_turn: int = 100) -> None:
    """Every upstream request holds at most ``bound`` tokens while the client's transcript
    ends more than three times larger, and at ``ratio_turn`` the request is under a third of
    the transcript (the run must have kept the bodies of that turn and of the last)."""
    outbound = [count_tokens(r.body.decode()) for r in run.requests]
    transcript = count_tokens(run.log.kept[ratio_turn].decode())
    transcript_end = count_tokens(run.log.kept[max(run.log.kept)].decode())
    assert max(outbound) <= bound, f"request #{outbound.index(max(outbound))}"
    assert transcript_end > 3 * bound, "the session is too short to show a bound"
    at_turn = outbound[run.starts[ratio_turn]]
    assert at_turn * 3 < transcript, (at_turn, transcript)


def check_epochs(run: HybridRun, *, least: int) -> None:
    """At least ``least`` boundaries happen, never two in a row nor more than one request in
    five (a Σ message that changed on every request would make every request an epoch of its
    own, and the prefix contract would hold for want of pairs), and within each epoch every
    request extends the one before it (``session_checks.prefix_break``)."""
    epochs = [epoch_of(r) for r in run.requests]
    boundaries = [i for i, (a, b) in enumerate(pairwise(epochs), 1) if a != b]
    assert least <= len(boundaries) <= len(run.requests) // 5, boundaries
    assert all(b - a >= 2 for a, b in pairwise(boundaries)), boundaries
    assert epochs[0] is None and None not in epochs[boundaries[0] :]
    same = [(a, b) for a, b in pairwise(run.requests) if epoch_of(a) == epoch_of(b)]
    assert len(same) == len(run.requests) - 1 - len(boundaries)
    breaks = [why for a, b in same if (why := prefix_break(a, b))]
    assert breaks == [], breaks


def check_pairs_and_head(run: HybridRun) -> None:
    """No request splits a tool pair, and every one holds the session's task."""
    for request in run.requests:
        assert unpaired(messages_of(request)) == [], f"request #{request.index}"
        assert run.plan.task in request.body.decode(), f"request #{request.index} lost the task"


def check_markers(run: HybridRun) -> None:
    """On an Anthropic upstream: at most four cache breakpoints in any request, one of them
    on the Σ message once there is one."""
    for request in run.requests:
        if request.wire is not Wire.MESSAGES:
            continue
        assert request.body.count(b'"cache_control"') <= MAX_BREAKPOINTS, request.index
        blocks = [
            block
            for message in messages_of(request)
            if isinstance(message.get("content"), list)
            for block in message["content"]
            if str(block.get("text", "")).startswith(SIGMA_PREFIX)
        ]
        assert all("cache_control" in block for block in blocks), request.index


def check_probe(run: HybridRun, source: str) -> None:
    """The fact, read once at step 5, is answered at the probe turn from ``source``, and the
    client gets the answer."""
    plan = run.plan
    reads = [s.number for s in plan.steps for use in s.uses if use.path == plan.fact_path]
    assert reads == [plan.fact_step] == [5]
    assert [(a.value, a.sources) for a in run.model.answers] == [(plan.fact, {source})]
    answered = run.model.answers[0].request
    assert run.starts[plan.probe_turn] <= answered < run.starts[plan.probe_turn + 1]
    assert plan.fact in run.log.replies[plan.probe_turn - 1].text
    if source == "recall":
        asked = run.requests[run.model.recalls[0]]
        assert plan.fact not in asked.body.decode(), "the fact was still in the request"
        last = messages_of(run.requests[answered])[-1]
        assert plan.fact in str(last.get("output") or last.get("content"))


def check_state(run: HybridRun, *, noted: bool) -> None:
    """The client never saw an internal call, and Σ holds every patch the model made."""
    seen = [call.name for reply in run.log.replies for call in reply.calls]
    assert not INTERNAL_TOOLS & set(seen), "an internal call reached the client"
    assert run.described is not None
    state = run.described["state"]
    last = len(run.plan.steps)
    findings = {f"s{n:03d}" for n in range(10, last + 1, 10)}
    assert set(state["findings"]) == findings | ({"release-key"} if noted else set())
    assert state["step"] == last // 10 * 10
    instruction = next(t for t in run.plan.instructions.values() if t != run.plan.probe)
    assert state["decisions"] == {"user-note": instruction}
    assert state["objective"] and state["files"] and state["errors_tried"]
    assert run.errors == []
