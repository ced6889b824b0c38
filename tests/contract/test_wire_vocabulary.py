"""Wire names stay in the adapters (STYLE.md, rule 7).

The rule this test keeps: outside ``protocols/`` no string literal of the package names a
wire's field, value or id prefix. A literal is every ``str`` constant in a module's syntax tree,
the constant pieces of f-strings included; string statements (docstrings, and the attribute
docstrings under constants) are prose and may mention wires, as comments may. A literal is
caught when it holds one of ``WIRE_WORDS`` as a whole word (``"stop_reason"``,
``"usage.input_tokens"``, but not ``"cache_control_note"``), or begins with one of
``ID_PREFIXES``. Python names are not literals: an attribute such as ``Response.stop_reason``
is the project's own word.

The words are those with no meaning in the project's own vocabulary; a word the project uses
for itself (``tool_result``, the archive's part tag) is not listed. Left out of the scan:
``protocols/`` (the adapters, where wire names belong), ``testing/`` (the scripted fake
provider, which writes each wire's bodies itself on purpose, so that the adapters are tested
against an independent copy) and ``bench/`` (its simulated provider, for the same reason).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path

import skillstate
from skillstate.conversation import ErrorKind, StopReason

PACKAGE = Path(skillstate.__file__).parent
EXEMPT = frozenset({"protocols", "testing", "bench"})

#: Field names, values and error names of the three wires.
WIRE_WORDS = (
    # OpenAI Chat Completions
    "tool_calls",
    "tool_call_id",
    "finish_reason",
    "stream_options",
    "include_usage",
    "prompt_tokens",
    "completion_tokens",
    "max_completion_tokens",
    "reasoning_content",
    # OpenAI Responses
    "previous_response_id",
    "function_call_output",
    "output_text",
    "input_text",
    "max_output_tokens",
    "incomplete_details",
    "encrypted_content",
    # Anthropic Messages
    "tool_use",
    "tool_use_id",
    "content_block",
    "content_block_start",
    "content_block_delta",
    "content_block_stop",
    "input_json_delta",
    "redacted_thinking",
    "input_tokens",
    "output_tokens",
    "cache_creation_input_tokens",
    "cache_read_input_tokens",
    "cache_control",
    "ephemeral",
    "stop_reason",
    "stop_sequences",
    "end_turn",
    "pause_turn",
    # error types and codes
    "api_error",
    "overloaded_error",
    "not_found_error",
    "invalid_request_error",
    "authentication_error",
    "permission_error",
    "rate_limit_error",
    "request_too_large",
    "timeout_error",
    "server_error",
    "model_not_found",
    "unknown_url",
    "context_length_exceeded",
)

#: Id prefixes: Chat completions, Responses responses and compaction items, Anthropic messages
#: and tool calls.
ID_PREFIXES = ("chatcmpl-", "resp_", "cmp_", "msg_", "toolu_")

_WORD = re.compile(r"(?<![A-Za-z0-9_])(" + "|".join(WIRE_WORDS) + r")(?![A-Za-z0-9_])")


def scanned_modules(package: Path = PACKAGE) -> list[Path]:
    return sorted(
        path for path in package.rglob("*.py") if path.relative_to(package).parts[0] not in EXEMPT
    )


def wire_literals(source: str) -> Iterator[tuple[int, str, str]]:
    """``(line, word, literal)`` for each literal of ``source`` that names a wire (see the
    module docstring)."""
    tree = ast.parse(source)
    prose = {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant)
    }
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or not isinstance(node.value, str):
            continue
        if id(node) in prose:
            continue
        text = node.value
        found = _WORD.search(text)
        if found is not None:
            yield node.lineno, found.group(1), text
        for prefix in ID_PREFIXES:
            if text.startswith(prefix):
                yield node.lineno, prefix, text


#: Literals that are the project's own API and happen to be wire words: GET /cost's token
#: fields, named by the issue that specified the document, and the command that reads them.
OWN_API = frozenset(
    (module, word)
    for module in ("economics/ledger/report.py", "cli/stats.py")
    for word in ("input_tokens", "output_tokens")
)


def test_no_wire_word_outside_the_adapters() -> None:
    found = [
        f"{path.relative_to(PACKAGE)}:{line}: {word!r} in {text[:60]!r}"
        for path in scanned_modules()
        for line, word, text in wire_literals(path.read_text(encoding="utf-8"))
        if (str(path.relative_to(PACKAGE)), word) not in OWN_API
    ]
    assert not found, "wire names outside protocols/:\n" + "\n".join(found)


def test_the_scan_covers_the_core() -> None:
    scanned = {path.relative_to(PACKAGE).parts[0] for path in scanned_modules()}
    assert {"conversation", "state", "server", "economics", "archive", "cli"} <= scanned
    assert not scanned & EXEMPT


def test_literals_are_caught_and_prose_is_not() -> None:
    source = '''
"""A docstring may say stop_reason and cache_control."""
MARK = {"type": "ephemeral"}
"""An attribute docstring may say tool_use too."""
# a comment may say finish_reason
def f(token: str) -> str:
    """Returns a chatcmpl- id."""
    reason = response.stop_reason  # our own attribute
    return f"resp_{token}" + "usage.input_tokens" + "cache_control_note"
'''
    hits = sorted((line, word) for line, word, _ in wire_literals(source))
    assert hits == [(3, "ephemeral"), (9, "input_tokens"), (9, "resp_")]


def test_the_canonical_words_are_no_wires_words() -> None:
    """Stop reasons and error kinds are the project's own: no value is a string any adapter
    reads or writes, so a wire's word cannot pass for a canonical one unmapped."""
    from skillstate.protocols import openai_errors
    from skillstate.protocols.anthropic_messages import errors as anthropic_errors
    from skillstate.protocols.anthropic_messages import usage as anthropic_usage
    from skillstate.protocols.openai_chat import usage as chat_usage

    wire_strings = set(WIRE_WORDS)
    wire_strings |= set(anthropic_usage.STOPS) | set(anthropic_usage.REASONS.values())
    wire_strings |= set(chat_usage._STOP) | set(chat_usage._FINISH.values())
    wire_strings |= set(anthropic_errors.TYPES.values())
    wire_strings |= set(openai_errors._NAMES)
    wire_strings |= {name for pair in openai_errors.PAIRS.values() for name in pair if name}
    wire_strings |= {"completed", "incomplete", "failed", "cancelled"}  # Responses statuses
    ours = {str(value) for value in (*StopReason, *ErrorKind)}
    assert not ours & wire_strings
