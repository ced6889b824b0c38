"""The warehouse workload: its generator, its truth, its scripted model (on hand-built requests
and through a real gateway in every mode) and its scoring."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import aiohttp
import pytest
from multidict import CIMultiDict, CIMultiDictProxy

from skillstate.bench.workload import Answer, Call, Variant, call_id
from skillstate.bench.workloads import warehouse_model
from skillstate.bench.workloads.warehouse import (
    DEFAULT_HORIZON,
    TELEMETRY_HEADER,
    Ask,
    Event,
    Inventory,
    Kind,
    Warehouse,
    answer_of,
    build,
    parse_event,
    question_steps,
)
from skillstate.conversation import Wire
from skillstate.support import jsonio
from skillstate.testing import ScriptedUpstream
from skillstate.testing.gateway import gateway_for
from skillstate.testing.recording import RecordedRequest
from skillstate.testing.session_clients import ChatAgent

# Generator and truth ---------------------------------------------------------------------


def test_the_generator_is_deterministic_per_seed() -> None:
    first, again, other = build(50, 7), build(50, 7), build(50, 8)
    assert first.events == again.events and first.questions == again.questions
    assert first.events != other.events
    assert DEFAULT_HORIZON == 50 and len(first.events) == 50
    assert build(50, 7, noise=5).events == first.events, "noise never changes the events"
    assert build(50, 7, noise=5).telemetry == build(50, 7, noise=5).telemetry


def test_store_ship_and_move_keep_the_books() -> None:
    books = Inventory()
    books.apply(Event(0, Kind.STORE, "gear-2", 10, "S001"))
    books.apply(Event(1, Kind.MOVE, "gear-2", 4, "S001", "S300"))
    books.apply(Event(2, Kind.STORE, "bolt-1", 7, "S300"))
    books.apply(Event(3, Kind.SHIP, "gear-2", 6, "S001"))
    books.apply(Event(4, Kind.WAIT))
    assert books.cells == {"S300": {"gear-2": 4, "bolt-1": 7}}, "an emptied shelf is gone"
    assert books.findings() == {"S300": "bolt-1=7, gear-2=4"}
    assert (books.total("gear-2"), books.most("gear-2"), books.most("valve-1")) == (
        4,
        "S300",
        "none",
    )
    books.apply(Event(5, Kind.STORE, "gear-2", 4, "S002"))
    assert books.most("gear-2") == "S002", "the lowest-numbered shelf on a tie"


@pytest.mark.parametrize("seed", range(5))
def test_the_truth_is_the_events_applied_and_never_negative(seed: int) -> None:
    session = build(200, seed)
    books = Inventory()
    for step, event in enumerate(session.events):
        assert event.step == step and parse_event(event.text()) == event
        if event.kind in (Kind.SHIP, Kind.MOVE):
            assert 0 < event.qty <= books.qty(event.shelf, event.item)
        books.apply(event)
        question = session.questions.get(step)
        if question is not None:
            expected = answer_of(question.ask, question.item, question.shelf, books)
            assert question.truth == question.book == expected
    assert books == session.truth
    assert {e.kind for e in session.events} == set(Kind)
    assert {q.ask for q in session.questions.values()} == set(Ask)


def test_drift_moves_goods_silently_so_truth_and_book_part() -> None:
    drifted = [build(200, seed, drift=True) for seed in range(5)]
    assert all(s.drifts for s in drifted)
    assert any(q.truth != q.book for s in drifted for q in s.questions.values())
    assert all(parse_event(e.text()) == e for s in drifted for e in s.events)


def test_the_session_protocol() -> None:
    session = build(10, 3, noise=4)
    assert question_steps(10) == sorted(session.questions) == [1, 3, 5, 7, 9]
    assert question_steps(200)[-1] == 199 and len(question_steps(200)) == 8
    assert all(session.instruction(s) for s in range(10)) and session.instruction(10) is None
    assert "then answer: " in (session.instruction(9) or "")
    result = session.execute(Call(call_id(4), "observe", {}))
    lines = result.split("\n")
    assert lines[0] == session.events[4].text() and lines[0].startswith("[step 4] ")
    assert lines[1] == TELEMETRY_HEADER and len(lines) == 6
    assert "No event" in session.execute(Call("call_x", "observe", {}))
    assert "Unknown tool" in session.execute(Call(call_id(1), "shell", {}))


def test_score_counts_answers_against_the_truth_and_sources_by_the_book() -> None:
    session = build(10, 3)
    answers = [
        Answer(s, f"Answer: {q.truth} [source: {'state' if s > 4 else 'context'}]")
        for s, q in session.questions.items()
    ]
    perfect = session.score(answers)
    assert (perfect.score, perfect.recall) == (1.0, 1.0)
    assert perfect.sources["q1"] == "context" and perfect.sources["q9"] == "state"
    paper_text = jsonio.dumps_str({"state_patch": {}, "action": answers[0].text})
    assert session.score([Answer(1, paper_text)]).sources["q1"] == "context"
    half = session.score([*answers[:2], Answer(5, "Answer: wrong [source: state]")])
    assert half.score == half.recall == 2 / 5
    assert set(half.sources.values()) == {"context", "lost"}


# The model on hand-built requests --------------------------------------------------------


def recorded(
    messages: list[dict[str, Any]], tools: tuple[str, ...] = ("observe",)
) -> RecordedRequest:
    body = {
        "model": "test-model",
        "messages": messages,
        "tools": [{"type": "function", "function": {"name": n, "parameters": {}}} for n in tools],
    }
    headers = CIMultiDictProxy(CIMultiDict[str]())
    raw = jsonio.dumps(body)
    return RecordedRequest(0, "POST", "/v1/chat/completions", {}, headers, raw, body, Wire.CHAT)


def observed(session: Warehouse, step: int) -> list[dict[str, Any]]:
    cid = call_id(step)
    call = {"id": cid, "type": "function", "function": {"name": "observe", "arguments": "{}"}}
    result = session.execute(Call(cid, "observe", {}))
    return [
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": cid, "content": result},
    ]


def history(session: Warehouse, upto: int) -> list[dict[str, Any]]:
    """The whole transcript up to step ``upto``'s observe result (passthrough)."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": session.system}]
    for step in range(upto + 1):
        messages.append({"role": "user", "content": session.instruction(step)})
        messages += observed(session, step)
        if step < upto:
            messages.append({"role": "assistant", "content": f"Noted step {step}."})
    return messages


def paper_request(session: Warehouse, step: int, sigma: dict[str, Any]) -> list[dict[str, Any]]:
    """A_t as paper mode renders it: the task slot with Σ, then the newest observation."""
    slot = (
        f"Task (the user's newest instruction):\n{session.instruction(step)}\n\n"
        f"State Σ:\n```json\n{jsonio.dumps_str(sigma)}\n```"
    )
    return [{"role": "system", "content": session.system}, {"role": "user", "content": slot}]


def expected(session: Warehouse, step: int) -> str:
    return session.questions[step].truth


def sigma_through(session: Warehouse, step: int) -> dict[str, Any]:
    books = Inventory()
    for event in session.events[: step + 1]:
        books.apply(event)
    return {"findings": books.findings(), "done": {"events": f"through step {step}"}}


def test_the_model_answers_right_from_the_whole_history() -> None:
    session = build(50, 5)
    model = warehouse_model.WarehouseModel(Variant.CARELESS)
    for step in session.questions:
        reply = model(recorded(history(session, step)))
        assert reply.calls == ()
        assert reply.text == f"Answer: {expected(session, step)} [source: context]"
    first = model(
        recorded(
            [
                {"role": "system", "content": "x"},
                {"role": "user", "content": session.instruction(0)},
            ]
        )
    )
    assert [(c.name, c.id) for c in first.calls] == [("observe", call_id(0))]


def test_in_paper_mode_the_model_answers_right_only_from_sigma() -> None:
    session = build(50, 5)
    step = max(session.questions)
    careful = warehouse_model.WarehouseModel(Variant.CAREFUL)
    with_sigma = paper_request(session, step, sigma_through(session, step - 1)) + observed(
        session, step
    )
    envelope = jsonio.loads(careful(recorded(with_sigma)).text)
    assert envelope["action"] == f"Answer: {expected(session, step)} [source: state]"
    assert envelope["state_patch"]["done"] == {"events": f"through step {step}"}
    without = paper_request(session, step, {}) + observed(session, step)
    careless = warehouse_model.WarehouseModel(Variant.CARELESS)
    blind = jsonio.loads(careless(recorded(without)).text)
    assert blind["state_patch"] == {}
    assert blind["action"] != f"Answer: {expected(session, step)} [source: context]"


def test_the_careful_patch_sends_only_the_shelves_that_changed() -> None:
    session = build(50, 5)
    step = next(s for s, e in enumerate(session.events) if s > 10 and e.kind is Kind.MOVE)
    model = warehouse_model.WarehouseModel(Variant.CAREFUL)
    messages = paper_request(session, step, sigma_through(session, step - 1)) + observed(
        session, step
    )
    patch = jsonio.loads(model(recorded(messages)).text)["state_patch"]
    event = session.events[step]
    assert set(patch["findings"]) <= {event.shelf, event.to}
    assert patch["done"] == {"events": f"through step {step}"}


CHANGES_NOTE = "[skillstate] Σ changes since the state message (merge them into it):\n```json\n"


def test_in_paper_mode_a_lost_patch_is_caught_up_while_its_event_is_in_view() -> None:
    session = build(50, 5)
    step = 20
    behind = paper_request(session, step, sigma_through(session, step - 2))
    model = warehouse_model.WarehouseModel(Variant.FAULTY)
    reply = model(recorded(behind + observed(session, step - 1)))
    assert [c.id for c in reply.calls] == [call_id(step)]
    patch = jsonio.loads(reply.text)["state_patch"]
    assert patch["done"] == {"events": f"through step {step - 1}"}
    caught = sigma_through(session, step - 2)
    caught["findings"] = {**caught["findings"], **patch.get("findings", {})}
    caught["findings"] = {k: v for k, v in caught["findings"].items() if v is not None}
    assert caught["findings"] == sigma_through(session, step - 1)["findings"]
    level = paper_request(session, step, sigma_through(session, step - 1))
    again = model(recorded(level + observed(session, step - 1)))
    assert jsonio.loads(again.text)["state_patch"] == {}


def test_hybrid_reads_the_sigma_message_and_the_tail_note_changes() -> None:
    session = build(50, 5)
    step = max(session.questions)
    snapshot = sigma_through(session, step - 3)
    changes = {k: v for k, v in sigma_through(session, step - 1).items() if v != snapshot.get(k)}
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": session.system},
        {"role": "user", "content": session.instruction(0)},
        {
            "role": "user",
            "content": "[skillstate] Session state Σ.\n```json\n"
            + jsonio.dumps_str(snapshot)
            + "\n```",
        },
        {"role": "user", "content": session.instruction(step)},
        *observed(session, step),
        {
            "role": "user",
            "content": CHANGES_NOTE + jsonio.dumps_str(changes) + "\n```",
        },
    ]
    model = warehouse_model.WarehouseModel(Variant.CAREFUL)
    reply = model(recorded(messages, ("observe", "skill_state")))
    (state_call,) = reply.calls
    assert state_call.name == "skill_state" and state_call.id == f"call_s{step:04d}_state"
    assert state_call.arguments["patch"]["done"] == {"events": f"through step {step}"}
    careless = warehouse_model.WarehouseModel(Variant.CARELESS)
    text = careless(recorded(messages, ("observe", "skill_state"))).text
    assert text == f"Answer: {expected(session, step)} [source: state]"


# End to end through a real gateway ------------------------------------------------------

COLLAPSE_SOON = {"min_turns": 4, "keep_recent_turns": 2, "max_window_tokens": 1000}


@dataclass
class Run:
    answers: list[Answer]
    state: Any
    upstream_texts: list[str]
    statuses: list[str]


async def play(session: Warehouse, variant: Variant, mode: str, **settings: Any) -> Run:
    """A custom agent loop on Chat Completions through the gateway, step by step."""
    name = f"warehouse-{mode}-{variant}"
    headers = {"x-skillstate-mode": mode, "x-skillstate-session": name}
    tools = [
        {
            "type": "function",
            "function": {
                "name": t.name,
                "description": t.description,
                "parameters": dict(t.parameters),
            },
        }
        for t in session.tools
    ]
    answers: list[Answer] = []
    async with (
        ScriptedUpstream(session.model(variant)) as up,
        gateway_for(up.url, settings=settings) as gw,
        aiohttp.ClientSession() as http,
    ):
        template = {"model": "test-model", "tools": tools}
        agent = ChatAgent(
            http, gw.url, template, session.system, session.instruction(0) or "", headers
        )
        for step in range(session.horizon):
            if step:
                agent.add_instruction(session.instruction(step) or "")
            for _ in range(4):
                reply = await agent.send()
                if not reply.calls:
                    answers.append(Answer(step, reply.text))
                    break
                results = [
                    (c.id, session.execute(Call(c.id, c.name, jsonio.loads(c.arguments or "{}"))))
                    for c in reply.calls
                ]
                agent.add_results(results)
            else:
                raise AssertionError(f"step {step} was never answered")
        assert up.errors == []
        described = await gw.context.engine.describe(name) if gw.context.engine else None
    texts = [r.body.decode() for r in up.requests]
    return Run(answers, (described or {}).get("state"), texts, [])


@pytest.mark.parametrize("variant", [Variant.CAREFUL, Variant.CARELESS])
async def test_off_mode_answers_everything_from_the_transcript(variant: Variant) -> None:
    session = build(10, 1)
    run = await play(session, variant, "off")
    scored = session.score(run.answers)
    assert (scored.score, scored.recall) == (1.0, 1.0)
    assert set(scored.sources.values()) == {"context"}


async def test_paper_mode_scores_only_when_the_model_writes_sigma() -> None:
    session = build(10, 1)
    careful = session.score((await play(session, Variant.CAREFUL, "paper")).answers)
    careless = session.score((await play(session, Variant.CARELESS, "paper")).answers)
    assert careful.score == 1.0 and "state" in careful.sources.values()
    assert careless.score < 0.7 and "lost" in careless.sources.values()


async def test_hybrid_mode_scores_when_the_model_writes_sigma_across_collapses() -> None:
    session = build(10, 1, noise=30)
    careful_run = await play(session, Variant.CAREFUL, "hybrid", collapse=COLLAPSE_SOON)
    careful = session.score(careful_run.answers)
    careless = session.score(
        (await play(session, Variant.CARELESS, "hybrid", collapse=COLLAPSE_SOON)).answers
    )
    assert careful.score == 1.0 and "state" in careful.sources.values()
    assert any("[skillstate] Session state Σ" in t for t in careful_run.upstream_texts)
    assert careless.score < 0.7 and "lost" in careless.sources.values()
    assert careful_run.state["findings"] == sigma_through(session, 9)["findings"]


@pytest.mark.parametrize("mode", ["paper", "hybrid"])
async def test_the_faulty_models_bad_patches_are_rejected_and_sigma_stays_whole(mode: str) -> None:
    session = build(10, 1)
    # skill_state from the first step, so that each kind of bad patch is sent through it
    tools_at_once = {"collapse": {"passthrough_until_boundary": False}}
    run = await play(session, Variant.FAULTY, mode, **(tools_at_once if mode == "hybrid" else {}))
    assert session.score(run.answers).score == 1.0
    assert run.state["findings"] == sigma_through(session, 9)["findings"]
    assert run.state["done"] == {"events": "through step 9"}
    seen = "\n".join(run.upstream_texts)
    if mode == "hybrid":
        assert (
            "Patch rejected, the state is unchanged: /findings: must be an object, not an array"
            in seen
        )
        assert "Patch refused: `patch` must be a JSON object" in seen
        assert "must be a string, not an object" in seen
    else:
        assert "Your last reply could not be used: the JSON does not parse" in seen
        assert "Patch rejected, the state is unchanged" in seen
