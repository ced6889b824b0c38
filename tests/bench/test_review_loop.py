"""review-loop: seeded, one file or diff per step, findings noticed from what was read and
asked for at the end; short runs through a real gateway."""

from __future__ import annotations

from hand_requests import answered, request, user
from workload_client import play

from skillstate.bench.workload import Answer, Call, Variant, call_id
from skillstate.bench.workloads import review_loop
from skillstate.support import jsonio
from skillstate.testing.session_view import Call as SeenCall


def _results(workload: review_loop.ReviewLoop) -> list[tuple[Call, str]]:
    found = []
    for n, step in enumerate(workload.steps):
        for k, use in enumerate(step.uses):
            made = Call(call_id(n, k), use.name, use.arguments)
            found.append((made, workload.execute(made)))
    return found


def test_a_seed_gives_the_same_review_and_another_seed_another() -> None:
    one, again = review_loop.build(50, 7), review_loop.build(50, 7)
    assert one.targets == again.targets and _results(one) == _results(again)
    assert review_loop.build(50, 8).targets != one.targets
    assert review_loop.DEFAULT_HORIZON == 50 and len(one.steps) == 50


def test_each_step_reviews_one_file_or_diff_and_the_last_asks_for_the_findings() -> None:
    workload = review_loop.build(50, 7)
    assert all(len(step.uses) == 1 for step in workload.steps[:-1])
    kinds = {use.name for step in workload.steps for use in step.uses}
    assert kinds == {"read_file", "shell"}
    assert workload.instruction(0) == review_loop.TASK
    assert workload.instruction(49) == review_loop.FINAL and workload.instruction(20) is None
    (probe,) = workload.probes
    assert probe.step == 49 and 10 <= len(probe.facts) <= 18
    assert {f.key for f in probe.facts} == {f"F{f.step:02d}" for f in probe.facts}


def test_the_reviewer_notices_each_planted_issue_at_its_file_and_line() -> None:
    workload = review_loop.build(50, 7)
    truth = {f.key: f.value for f in workload.facts}
    noticed = {}
    for made, out in _results(workload):
        seen = SeenCall(made.id, made.name, jsonio.dumps_str(dict(made.arguments)))
        step = int(made.id[6:10])
        for key, line in review_loop.notice(step, [(seen, out)]):
            noticed[key] = line.split(": ", 1)[1].split(" ", 1)[0]
    assert noticed == truth
    assert any(t.diff and t.issue is not None for t in workload.targets)
    assert any(not t.diff and t.issue is not None for t in workload.targets)


def test_the_reviewer_says_its_finding_and_a_careful_one_notes_it_in_state() -> None:
    workload = review_loop.build(50, 7)
    fact = workload.facts[0]
    use = workload.steps[fact.step].uses[0]
    result = workload.execute(Call(call_id(fact.step), use.name, use.arguments))
    items = [
        user(review_loop.TASK),
        *answered(call_id(fact.step), use.name, result, jsonio.dumps_str(dict(use.arguments))),
    ]
    tools = ("read_file", "shell", "skill_state", "recall")
    reply = workload.model(Variant.CAREFUL)(request(items, tools))
    assert reply.text.startswith(f"Finding {fact.key}: {fact.value} — ")
    state, call = reply.calls
    assert state.arguments["patch"]["findings"] == {fact.key: reply.text}
    assert call.id == call_id(fact.step + 1)
    careless = workload.model(Variant.CARELESS)(request(items, tools))
    assert careless.text == reply.text and len(careless.calls) == 1


def test_the_score_is_the_share_of_findings_reported() -> None:
    workload = review_loop.build(50, 7)
    facts = workload.facts
    lines = [f"- {f.key}: {f.value} [context]" for f in facts[:2]]
    lines.append(f"- {facts[2].key}: src/elsewhere.py:1 [recall]")
    score = workload.score([Answer(49, "\n".join(lines))])
    assert score.score == 2 / len(facts) and score.recall == 3 / len(facts)
    assert score.sources[facts[3].key] == "lost"


async def test_a_short_review_through_the_gateway_in_hybrid_mode_reports_every_finding() -> None:
    workload = review_loop.build(14, 1)
    played = await play(workload, Variant.CARELESS, mode="hybrid", wire="messages")
    score = workload.score(played.answers)
    assert played.errors == [] and played.violations() == []
    assert score.score == 1.0 and score.recall == 1.0 and "recall" in score.sources.values()


async def test_a_short_review_with_the_lanes_off_keeps_every_finding_in_context() -> None:
    workload = review_loop.build(14, 1)
    played = await play(workload, Variant.FAULTY, mode="off", wire="messages")
    score = workload.score(played.answers)
    assert played.errors == [] and played.violations() == []
    assert score.score == 1.0 and set(score.sources.values()) == {"context"}
