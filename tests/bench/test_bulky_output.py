"""bulky-output: one 120 KB JSON document at step 1 of a Chat tool loop of small turns, its lot
code probed at the end; seeded. Through the gateway, hybrid mode views the document in the
request that adds it and recalls the code from the archive, for much less than pass-through
pays to re-send the document on every turn (issue 29)."""

from __future__ import annotations

import json

import pytest
from hand_requests import answered, request, user

from skillstate.bench import run
from skillstate.bench.arms import ARMS, Pricing
from skillstate.bench.workload import Answer, Call, Variant, call_id, step_of
from skillstate.bench.workloads import bulky_output, load
from skillstate.conversation import Wire
from skillstate.economics.tokenizer import encoding
from skillstate.outputs.views import render, view_of


def _outputs(workload: bulky_output.BulkyOutput) -> list[tuple[int, Call, str]]:
    found = []
    for n, step in enumerate(workload.steps):
        for k, use in enumerate(step.uses):
            made = Call(call_id(n, k), use.name, use.arguments)
            found.append((n, made, workload.execute(made)))
    return found


def test_a_seed_gives_the_same_session_and_another_seed_another() -> None:
    one, again, other = (
        bulky_output.build(17, 4),
        bulky_output.build(17, 4),
        bulky_output.build(17, 5),
    )
    assert one.steps == again.steps and one.instructions == again.instructions
    assert _outputs(one) == _outputs(again)
    assert one.truth != other.truth and one.document() != other.document()
    assert load("bulky-output").default_horizon == bulky_output.DEFAULT_HORIZON == 17
    assert len(one.steps) == one.horizon == 17


def test_one_document_of_120_kb_arrives_at_step_1_and_the_rest_is_small() -> None:
    workload = bulky_output.build(17, 4)
    done = _outputs(workload)
    assert [(n, c.name) for n, c, _ in done[:2]] == [(0, "read_file"), (1, "fetch_inventory")]
    document = done[1][2]
    assert document == workload.document()
    assert 110_000 <= len(document) <= 130_000
    assert 27_000 <= len(encoding().encode_ordinary(document)) <= 33_000
    parsed = json.loads(document)
    assert parsed["count"] == len(parsed["items"]) == bulky_output.RECORDS
    assert {"stock", "bin"} <= parsed["items"][0].keys()  # nested fields
    rest = [out for n, _, out in done if n != bulky_output.DOCUMENT_STEP]
    assert len(rest) == 15 and all(len(out) < 600 for out in rest)
    assert {c.name for _, c, _ in done[2:]} == {"read_file", "run"}
    assert all(out.startswith("Exit code: 0") for _, c, out in done if c.name == "run")
    elsewhere = workload.execute(Call("x", "fetch_inventory", {"warehouse": "nowhere-1"}))
    assert elsewhere == '{"error": "unknown warehouse"}'


def test_the_probed_lot_code_shows_once_inside_the_document_and_not_in_its_view() -> None:
    for seed in (1, 2, 3):
        workload = bulky_output.build(17, seed)
        [fact] = workload.facts
        [probe] = workload.probes
        assert probe.step == 16 and workload.instruction(16) == probe.text
        assert workload.steps[16].probe == probe and fact.query == workload.truth.item
        done = _outputs(workload)
        text = "\n".join(out for _, _, out in done)
        assert text.count(fact.value) == 1 and workload.document().count(fact.value) == 1
        holding = {n for n, _, out in done if fact.pattern.search(out)}
        assert holding == {fact.step} == {bulky_output.DOCUMENT_STEP}
        found = fact.pattern.search(workload.document())
        assert found is not None and found.group(1) == fact.value
        items = json.loads(workload.document())["items"]
        place = [i for i, item in enumerate(items) if item["lot"] == fact.value]
        assert place == [int(workload.truth.item.removeprefix("item-"))]
        assert len(items) // 3 <= place[0] < 2 * len(items) // 3
        assert fact.value not in probe.text and fact.value not in workload.system
        view = view_of(workload.document())
        assert view is not None and view.kind == "json"
        shown = render(view, "ar_" + "0" * 24)
        assert fact.value not in shown and len(shown) < 2_000


def test_the_model_answers_from_context_recall_or_says_unknown() -> None:
    workload = bulky_output.build(17, 2)
    [probe] = workload.probes
    lot = workload.truth.lot
    model = workload.model(Variant.CARELESS)
    document = workload.document()

    def items(evidence: list[object]) -> list[object]:
        previous = call_id(probe.step - 1)
        return [
            user(workload.instruction(0) or ""),
            *evidence,
            *answered(previous, "run", "Exit code: 0\nOutput:\n3 passed in 0.2s\n"),
            user(probe.text),
        ]

    whole = answered(call_id(1), "fetch_inventory", document)
    verbatim = model(request(items(whole)))
    assert verbatim.text.endswith(f"- probed-lot: {lot} [context]") and not verbatim.calls

    tools = ("fetch_inventory", "read_file", "run", "recall")
    asking = model(request(items([]), tools))
    (recall,) = asking.calls
    assert recall.name == "recall" and recall.arguments == {"query": workload.truth.item}
    assert recall.id is not None and step_of(recall.id) is None
    excerpt = f'1830-         {{\n1831:             "id": "{workload.truth.item}",\n'
    excerpt += f'1832-             "lot": "{lot}",'
    recalled = [*items([]), *answered(recall.id, "recall", f"In ar_1:\n{excerpt}")]
    assert model(request(recalled, tools)).text.endswith(f"- probed-lot: {lot} [recall]")

    lost = model(request(items([])))
    assert lost.text.endswith("- probed-lot: unknown [lost]")
    assert workload.score([Answer(16, verbatim.text)]).score == 1.0
    assert workload.score([Answer(16, lost.text)]).sources == {"probed-lot": "lost"}


WIRES = [
    (Pricing.OPENAI, Wire.CHAT),
    (Pricing.ANTHROPIC, Wire.MESSAGES),
    (Pricing.OPENAI, Wire.RESPONSES),
]


@pytest.mark.parametrize(("pricing", "wire"), WIRES, ids=[f"{p}-{w}" for p, w in WIRES])
async def test_hybrid_views_the_document_on_arrival_and_costs_less_than_pass_through(
    pricing: Pricing, wire: Wire
) -> None:
    """Pass-through sends the document whole in every request from step 2 on; hybrid sends
    its view from the request that adds it, recalls the lot code, and costs far less, billed
    with each pricing's prompt cache."""
    workload = bulky_output.build(bulky_output.DEFAULT_HORIZON, 1)
    passthrough = await run.play(workload, ARMS["passthrough"], pricing, wire=wire)
    hybrid = await run.play(workload, ARMS["hybrid"], pricing, wire=wire)
    for record in (passthrough, hybrid):
        assert record.completed and record.violations == 0, record.error
        assert record.score == 1.0
    assert passthrough.sources == {"probed-lot": "context"}
    assert hybrid.sources == {"probed-lot": "recall"}
    whole = [r.turn for r in passthrough.requests if r.prompt_tokens > 20_000]
    assert whole == list(range(2, 17))
    assert max(r.prompt_tokens for r in hybrid.requests) < 5_000
    assert hybrid.cost < 0.2 * passthrough.cost, (hybrid.cost, passthrough.cost)


@pytest.mark.parametrize(("pricing", "wire"), WIRES, ids=[f"{p}-{w}" for p, w in WIRES])
async def test_paper_mode_views_the_document_and_recalls_the_lot_code(
    pricing: Pricing, wire: Wire
) -> None:
    """Paper mode offers ``recall`` from the observation that holds the document (its view
    goes in its place), and the model, finding the lot code in neither Σ nor its observation,
    recalls it from the archive at the question."""
    workload = bulky_output.build(bulky_output.DEFAULT_HORIZON, 2)
    paper = await run.play(workload, ARMS["paper"], pricing, wire=wire)
    assert paper.completed and paper.violations == 0, paper.error
    assert paper.score == 1.0 and paper.sources == {"probed-lot": "recall"}
    assert max(r.prompt_tokens for r in paper.requests) < 5_000
