"""coding-loop: seeded, shaped like a coding agent's traffic, and its model answers probes from
what it was sent (verbatim, Σ, recall, else unknown); short runs through a real gateway."""

from __future__ import annotations

import random
import re

from hand_requests import answered, output, request, user
from workload_client import play

from skillstate.bench.workload import Answer, Call, Variant, call_id, step_of
from skillstate.bench.workloads import coding_loop
from skillstate.bench.workloads.facts import spoiled
from skillstate.state.schema import default_agent_shapes
from skillstate.support import jsonio


def _outputs(workload: coding_loop.CodingLoop) -> list[tuple[int, Call, str]]:
    found = []
    for n, step in enumerate(workload.steps):
        for k, use in enumerate(step.uses):
            made = Call(call_id(n, k), use.name, use.arguments)
            found.append((n, made, workload.execute(made)))
    return found


def test_a_seed_gives_the_same_session_and_another_seed_another() -> None:
    one, again, other = (
        coding_loop.build(120, 4),
        coding_loop.build(120, 4),
        coding_loop.build(120, 5),
    )
    assert one.steps == again.steps and one.instructions == again.instructions
    assert _outputs(one) == _outputs(again)
    assert one.truth != other.truth and one.steps != other.steps
    assert coding_loop.DEFAULT_HORIZON == 120 and one.horizon == len(one.steps) == 120


def test_the_session_has_the_shapes_of_a_coding_agent() -> None:
    workload = coding_loop.build(120, 4)
    assert {t.name for t in workload.tools} == {"read_file", "shell", "apply_patch"}
    done = _outputs(workload)
    reads = [len(out) for _, c, out in done if c.name == "read_file"]
    assert len(reads) > 30 and all(5_000 <= size <= 52_000 for size in reads)
    logs = [out for _, c, out in done if "pytest" in str(c.arguments.get("command", ""))]
    sizes = [len(log.split("Output:\n", 1)[1]) for log in logs]
    assert len(logs) > 10 and all(5_000 <= size <= 15_000 for size in sizes)
    assert any("1 failed" in log for log in logs) and any("Exit code: 0" in log for log in logs)
    assert {out for _, c, out in done if c.name == "apply_patch"} == {"applied"}
    assert any("rg -n" in str(c.arguments.get("command", "")) for _, c, _ in done)
    parallel = [s for s in workload.steps if len(s.uses) >= 2]
    assert parallel and all(u.name == "read_file" for s in parallel for u in s.uses)
    mid = [n for n, text in workload.instructions.items() if text.startswith("Also check")]
    assert mid == [72] and "retry limit in src/shop/http_client.py" in workload.instructions[72]
    assert workload.steps[72].uses[0].arguments == {"path": coding_loop.RETRY_FILE}
    assert [p.step for p in workload.probes] == [96, 102, 108, 112, 118]
    assert all(len(p.facts) == 1 and p.facts[0].step < 80 for p in workload.probes)
    assert {f.step for f in workload.facts} == {0, 1, 2, 72}
    for fact in workload.facts:  # each fact shows in exactly the results of its step
        holding = {n for n, _, out in done if fact.pattern.search(out)}
        assert holding == {fact.step}
        values = {m.group(1) for _, _, out in done if (m := fact.pattern.search(out))}
        assert values == {fact.value}


def test_a_short_horizon_still_has_every_part() -> None:
    workload = coding_loop.build(12, 0)
    assert len(workload.probes) == 1 and len(workload.probes[0].facts) == 5
    assert workload.steps[-1].final and workload.instruction(11) == coding_loop.CARRY_ON


def _probe_items(workload: coding_loop.CodingLoop, evidence: list[object]) -> list[object]:
    probe = workload.probes[0]
    previous = call_id(probe.step - 1)
    return [
        user(coding_loop.TASK),
        *evidence,
        *answered(previous, "read_file", "def ok():\n    return 1\n"),
        user(probe.text),
    ]


def test_the_model_answers_from_context_state_recall_or_says_unknown() -> None:
    workload = coding_loop.build(120, 4)
    port = workload.truth.port
    model = workload.model(Variant.CARELESS)
    server = workload.file(coding_loop.SERVER_FILE)
    verbatim = model(request(_probe_items(workload, answered(call_id(0), "read_file", server))))
    assert verbatim.text.endswith(f"- server-port: {port} [context]") and not verbatim.calls

    state = jsonio.dumps_str({"findings": {"server-port": f"SERVER_PORT = {port}"}})
    sigma = user(f"[skillstate] Session state Σ\n```json\n{state}\n```")
    in_state = model(request(_probe_items(workload, [sigma])))
    assert in_state.text.endswith(f"- server-port: {port} [state]")

    tools = ("read_file", "shell", "recall", "skill_state")
    asking = model(request(_probe_items(workload, []), tools))
    (recall,) = asking.calls
    assert recall.name == "recall" and recall.arguments == {"query": "SERVER_PORT"}
    assert recall.id is not None and step_of(recall.id) is None
    items = _probe_items(workload, [])
    items += answered(recall.id, "recall", f"In arc-1:\n  40: SERVER_PORT = {port}")
    assert model(request(items, tools)).text.endswith(f"- server-port: {port} [recall]")

    lost = model(request(_probe_items(workload, [])))
    assert lost.text.endswith("- server-port: unknown [lost]")
    score = workload.score([Answer(96, verbatim.text), Answer(102, lost.text)])
    assert score.sources["server-port"] == "context"
    assert score.sources["first-failure-expected"] == "lost" and score.score == 0.2


def test_a_careful_model_notes_each_probed_fact_in_state_as_it_reads_it() -> None:
    workload = coding_loop.build(120, 4)
    server = workload.file(coding_loop.SERVER_FILE)
    items = [user(coding_loop.TASK), *answered(call_id(0), "read_file", server)]
    items.append(output(call_id(0, 1), workload.file(coding_loop.CONSTANTS_FILE)))
    tools = ("read_file", "shell", "apply_patch", "recall", "skill_state")
    state, *calls = workload.model(Variant.CAREFUL)(request(items, tools)).calls
    assert state.name == "skill_state" and [c.id for c in calls] == [call_id(1)]
    findings = state.arguments["patch"]["findings"]
    assert findings["server-port"] == f"SERVER_PORT = {workload.truth.port}"
    assert workload.truth.namespace in findings["cache-namespace"]
    careless = workload.model(Variant.CARELESS)(request(items, tools))
    assert [c.name for c in careless.calls] == ["shell"]
    offered_not = workload.model(Variant.CAREFUL)(request(items))
    assert "skill_state" not in [c.name for c in offered_not.calls]


def test_a_pruning_model_deletes_the_findings_it_noted_before() -> None:
    workload = coding_loop.build(120, 4)
    server = workload.file(coding_loop.SERVER_FILE)
    items = [user(coding_loop.TASK), *answered(call_id(0), "read_file", server)]
    tools = ("read_file", "shell", "apply_patch", "recall", "skill_state")
    state, *_ = workload.model(Variant.PRUNING)(request(items, tools)).calls
    findings = state.arguments["patch"]["findings"]
    assert findings["server-port"] == f"SERVER_PORT = {workload.truth.port}"
    assert findings["retry-limit"] is None and findings["cache-namespace"] is None


async def test_the_union_rule_keeps_in_state_what_a_pruning_model_deletes() -> None:
    """The default schema keeps ``findings`` by ``union``: every probed fact is answered from
    Σ; with every key replaced by a patch (no rules) the model deleted them, and finds them
    in the archive or not at all."""
    workload = coding_loop.build(60, 1)
    kept = await play(workload, Variant.PRUNING, mode="hybrid", wire="chat", settings={})
    assert kept.errors == [] and kept.violations() == []
    assert set(workload.score(kept.answers).sources.values()) == {"state"}
    replaced = {"schema": [f"{key}:replace" for key in default_agent_shapes()]}
    pruned = await play(workload, Variant.PRUNING, mode="hybrid", wire="chat", settings=replaced)
    sources = list(workload.score(pruned.answers).sources.values())
    assert sources.count("state") == 1 and sources.count("recall") == 4  # a round each


def test_a_faulty_model_sends_bad_patches_among_good_ones() -> None:
    patch = {"step": 3, "findings": {"server-port": "SERVER_PORT = 8443"}}
    kinds = set()
    for n in range(40):
        sent = spoiled(patch, random.Random(n))
        if sent == patch:
            kinds.add("good")
        elif isinstance(sent, str):
            kinds.add("broken-json")
            assert not re.fullmatch(r"\{.*\}", sent)
        elif isinstance(sent["findings"], list):
            kinds.add("overwrite")
        else:
            assert isinstance(sent["step"], str)
            kinds.add("wrong-type")
    assert kinds == {"good", "broken-json", "overwrite", "wrong-type"}
    assert jsonio.dumps_str(patch)


async def test_a_short_run_through_the_gateway_in_hybrid_mode_recalls_every_fact() -> None:
    workload = coding_loop.build(16, 2)
    played = await play(workload, Variant.CARELESS, mode="hybrid")
    score = workload.score(played.answers)
    assert played.errors == [] and played.violations() == []
    assert score.score == 1.0 and score.recall == 1.0
    assert "recall" in score.sources.values()  # the early facts were collapsed and recalled
    careful = await play(workload, Variant.CAREFUL, mode="hybrid")
    assert set(workload.score(careful.answers).sources.values()) == {"state"}


async def test_a_short_run_with_the_lanes_off_finds_every_fact_in_context() -> None:
    workload = coding_loop.build(16, 2)
    played = await play(workload, Variant.CAREFUL, mode="off")
    score = workload.score(played.answers)
    assert played.errors == [] and played.violations() == []
    assert score.score == 1.0 and set(score.sources.values()) == {"context"}
    assert len(played.requests) == workload.horizon  # no internal rounds with the lanes off


async def test_a_short_run_in_paper_mode_answers_every_fact_from_state() -> None:
    """Paper sends Σ and the latest observation only: the model finds its step from Σ and
    the facts in it. A streamed envelope is checked once: a spoiled patch is lost, and with it
    the facts only that step's observation showed (never a wrong value)."""
    workload = coding_loop.build(16, 2)
    played = await play(workload, Variant.CAREFUL, mode="paper")
    score = workload.score(played.answers)
    assert played.errors == [] and played.violations() == []
    assert score.score == 1.0 and set(score.sources.values()) == {"state"}
    careless = workload.score((await play(workload, Variant.CARELESS, mode="paper")).answers)
    assert careless.score < 1.0 and set(careless.sources.values()) == {"lost"}
    faulty_run = await play(workload, Variant.FAULTY, mode="paper")
    faulty = workload.score(faulty_run.answers)
    assert faulty_run.errors == [] and faulty.score == faulty.recall < 1.0
