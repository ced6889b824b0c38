"""Hypothesis strategies for valid Responses request and response bodies, covering every shape
the adapter names: string and list input, every item type (typed and untyped messages, calls,
outputs, reasoning with summary / content / encrypted_content, hosted-tool items), content
part kinds, tool kinds, tool_choice shapes, null and absent fields, and unknown keys anywhere."""

from __future__ import annotations

import json
import string
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

DATA = Path(__file__).parent / "data_openai_responses"
RECORDED = Path(__file__).parents[1] / "fixtures" / "recorded" / "openai-responses"

text = st.text(max_size=12)
ident = st.text(string.ascii_letters + string.digits + "_-", min_size=1, max_size=10)
scalar = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
json_value = st.recursive(
    scalar, lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3)
)
unknown = st.dictionaries(st.from_regex(r"x_[a-z]{1,5}", fullmatch=True), json_value, max_size=2)
status = st.sampled_from(["in_progress", "completed", "incomplete"])


def obj(required: dict[str, Any], optional: dict[str, Any] | None = None) -> Any:
    """An object with ``required`` keys, any of ``optional`` keys, and unknown ``x_`` keys."""
    fixed = st.fixed_dictionaries(required, optional=optional or {})
    return st.tuples(fixed, unknown).map(lambda pair: {**pair[1], **pair[0]})


def nullable(values: Any) -> Any:
    return st.none() | values


urls = st.sampled_from(
    [
        "https://example.com/cat.png",
        "data:image/png;base64,iVBORw0KGgo=",
        "data:image/jpeg;base64,",
        "data:image/svg+xml,<svg/>",
        "data:;base64,AAAA",
        "data:image/png;charset=utf-8;base64,AAAA",
    ]
)
input_text = obj(
    {"type": st.just("input_text"), "text": text}, {"prompt_cache_breakpoint": json_value}
)
output_text = obj(
    {"type": st.just("output_text"), "text": text},
    {"annotations": st.lists(json_value, max_size=2), "logprobs": st.just([])},
)
refusal = obj({"type": st.just("refusal"), "refusal": text})
input_image = obj(
    {"type": st.just("input_image")},
    {
        "image_url": nullable(urls),
        "detail": nullable(st.sampled_from(["auto", "low", "high"])),
        "file_id": nullable(ident),
    },
)
input_file = obj({"type": st.just("input_file")}, {"file_id": ident, "filename": text})
any_part = input_text | output_text | refusal | input_image | input_file

common = {"id": ident, "status": status}
message_type = {"type": st.just("message")}


def message(roles: list[str], parts: Any) -> Any:
    content = text | st.lists(parts, max_size=3)
    fields = {"role": st.sampled_from(roles), "content": content}
    return obj(fields, {**message_type, **common, "phase": st.sampled_from(["commentary"])})


user_message = message(["user", "system", "developer"], any_part)
assistant_message = message(["assistant"], output_text | refusal | input_text)
function_call = obj(
    {"type": st.just("function_call"), "call_id": ident, "name": ident, "arguments": text},
    {**common, "namespace": ident},
)
custom_call = obj(
    {"type": st.just("custom_tool_call"), "call_id": ident, "name": ident, "input": text},
    common,
)
tool_output = text | st.lists(input_text | input_image | input_file, max_size=3)
function_output = obj(
    {"type": st.just("function_call_output"), "call_id": ident, "output": tool_output}, common
)
custom_output = obj(
    {"type": st.just("custom_tool_call_output"), "call_id": ident, "output": tool_output},
    {"id": ident},
)
summary_part = obj({"type": st.just("summary_text"), "text": text})
content_part = obj({"type": st.just("reasoning_text"), "text": text})
reasoning = obj(
    {"type": st.just("reasoning"), "id": ident, "summary": st.lists(summary_part, max_size=3)},
    {
        "content": nullable(st.lists(content_part, max_size=2)),
        "encrypted_content": nullable(text),
        "status": status,
    },
)
hosted = st.one_of(
    obj({"type": st.just("web_search_call"), "id": ident, "status": status, "action": json_value}),
    obj({"type": st.just("local_shell_call"), "id": ident, "call_id": ident, "action": json_value}),
    obj({"type": st.just("local_shell_call_output"), "id": ident, "output": text}),
    obj({"id": ident}, {"type": st.just("item_reference")}),
    obj({"type": st.just("compaction"), "encrypted_content": text}),
    obj(
        {
            "type": st.just("mcp_approval_response"),
            "approval_request_id": ident,
            "approve": st.booleans(),
        }
    ),
)
#: Each content part kind, inside a user message with a list content.
PART_SHAPES = {
    "input_text": input_text,
    "output_text": output_text,
    "refusal": refusal,
    "input_image": input_image,
    "input_file": input_file,
}
#: Each input item kind alone, so every one is drawn often (one_of favours few).
ITEM_SHAPES = {
    "user_message": user_message,
    "assistant_message": assistant_message,
    "function_call": function_call,
    "custom_tool_call": custom_call,
    "function_call_output": function_output,
    "custom_tool_call_output": custom_output,
    "reasoning": reasoning,
    "hosted": hosted,
}
turn_item = assistant_message | function_call | custom_call | reasoning
input_item = user_message | turn_item | function_output | custom_output | hosted

function_tool = obj(
    {"type": st.just("function"), "name": ident},
    {
        "description": nullable(text),
        "parameters": nullable(st.dictionaries(text, json_value, max_size=2)),
        "strict": nullable(st.booleans()),
    },
)
custom_tool = obj(
    {"type": st.just("custom"), "name": ident}, {"description": text, "format": json_value}
)
other_tool = st.one_of(
    obj(
        {
            "type": st.just("namespace"),
            "name": ident,
            "description": text,
            "tools": st.lists(function_tool, max_size=2),
        }
    ),
    obj({"type": st.just("web_search")}, {"external_web_access": st.booleans()}),
    obj({"type": st.just("local_shell")}),
    obj({"type": st.just("mcp"), "server_label": ident}, {"server_url": text}),
)
tool_choice = st.one_of(
    st.sampled_from(["auto", "none", "required"]),
    st.fixed_dictionaries({"type": st.sampled_from(["function", "custom"]), "name": ident}),
    obj({"type": st.just("allowed_tools"), "mode": st.just("auto"), "tools": json_value}),
    st.fixed_dictionaries({"type": st.sampled_from(["web_search_preview", "file_search"])}),
    st.none(),
)
reasoning_param = nullable(
    obj(
        {},
        {
            "effort": nullable(st.sampled_from(["minimal", "low", "medium", "high"])),
            "summary": nullable(st.sampled_from(["auto", "concise", "detailed"])),
        },
    )
)
number = nullable(st.integers(0, 2) | st.floats(0, 2, allow_nan=False))

request_body = obj(
    {
        "model": ident,
        "input": text | st.lists(input_item, max_size=6),
    },
    {
        "instructions": nullable(text),
        "tools": nullable(st.lists(function_tool | custom_tool | other_tool, max_size=3)),
        "tool_choice": tool_choice,
        "max_output_tokens": nullable(st.integers(1, 1 << 40)),
        "temperature": number,
        "top_p": number,
        "stream": nullable(st.booleans()),
        "parallel_tool_calls": nullable(st.booleans()),
        "reasoning": reasoning_param,
        "include": st.lists(st.sampled_from(["reasoning.encrypted_content"]), max_size=1),
        "store": nullable(st.booleans()),
        "prompt_cache_key": text,
        "client_metadata": st.dictionaries(ident, text, max_size=2),
        "metadata": nullable(st.dictionaries(ident, text, max_size=2)),
        "text": json_value,
        "truncation": st.sampled_from(["auto", "disabled"]),
        "previous_response_id": nullable(ident),
        "service_tier": st.sampled_from(["auto", "default", "flex"]),
        "user": text,
    },
)

usage = obj(
    {
        "input_tokens": st.integers(0, 10**6),
        "input_tokens_details": obj(
            {"cached_tokens": st.integers(0, 10**6)}, {"cache_write_tokens": st.integers(0, 10**6)}
        ),
        "output_tokens": st.integers(0, 10**6),
        "output_tokens_details": obj({"reasoning_tokens": st.integers(0, 10**6)}),
        "total_tokens": st.integers(0, 2 * 10**6),
    }
)
output_message = obj(
    {
        "type": st.just("message"),
        "id": ident,
        "role": st.just("assistant"),
        "status": status,
        "content": st.lists(output_text | refusal, max_size=3),
    },
    {"phase": st.sampled_from(["commentary", "final_answer"])},
)
output_item = output_message | function_call | custom_call | reasoning | hosted
response_body = obj(
    {
        "id": ident,
        "object": st.just("response"),
        "model": ident,
        "output": st.lists(output_item, max_size=5),
    },
    {
        "created_at": st.integers(0, 2**31) | st.floats(0, 2**31) | st.none(),
        "status": st.sampled_from(
            ["completed", "incomplete", "failed", "in_progress", "cancelled"]
        ),
        "incomplete_details": nullable(
            st.fixed_dictionaries(
                {"reason": st.sampled_from(["max_output_tokens", "content_filter"])}
            )
        ),
        "error": nullable(
            st.fixed_dictionaries({"code": st.just("server_error"), "message": text})
        ),
        "usage": nullable(usage),
        "tools": st.lists(function_tool | other_tool, max_size=2),
        "tool_choice": tool_choice,
        "parallel_tool_calls": st.booleans(),
        "instructions": nullable(text),
        "temperature": number,
        "reasoning": reasoning_param,
        "metadata": st.dictionaries(ident, text, max_size=2),
    },
)


def fixture(name: str) -> Any:
    return json.loads((DATA / name).read_text())


def request_fixtures() -> list[tuple[str, Any]]:
    """Recorded real-client bodies (when another helper has recorded any) and ours."""
    bodies = [
        (path.name, json.loads(path.read_text()))
        for path in sorted(RECORDED.glob("*.json"))
        if not path.name.endswith(".headers.json")
    ]
    ours = [(name, fixture(name)) for name in ("codex_turn.json", "sdk_request.json")]
    return bodies + ours
