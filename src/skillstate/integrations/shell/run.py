"""``skillstate shell``: run one allowed command, archive its exact output, show a reduction.

Contract, in order:

1. The command is judged again (``allow.decide_argv``) where it runs, against the project root
   it was judged for: one refused runs nothing.
2. It runs without a shell (``subprocess``, the words as given; git with the settings of
   ``git.hardened`` and ``git.environment``), stdin closed, in the working directory.
3. Its exact record — stdout and stderr as bytes, the exit code and the words — is archived in
   the data directory's archive (the store ``skillstate archive get`` reads) as one span: a
   ``tool`` message holding a ``ToolResult`` whose content is stdout then stderr (each a
   ``Text`` with ``hints["stream"]``; bytes that are not UTF-8 kept as lone surrogates, which
   the archive's canonical form keeps exactly) and whose ``extra`` holds ``argv`` and
   ``exit_code``. Nothing in the archive is redacted.
4. stdout is shown reduced (``reducers.reduce``, then redacted) after one header line naming
   the ref, only when the archive kept it and the reduction pays; otherwise it is shown
   exactly, with no header. stderr is passed through exactly, and the exit code is the
   command's.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence

from skillstate.archive import Archive, canonical_span, ref_for
from skillstate.conversation import Message, Text, ToolResult
from skillstate.integrations.shell.process import (
    MISSING_EXIT,
    REFUSED_EXIT,
    Outcome,
    execute,
    prepared,
)
from skillstate.outputs.commands import reducers
from skillstate.outputs.redaction import redact

SESSION = "shell"
"""The archive index's session for the lane's outputs."""
CALL_ID = "skillstate-shell"

__all__ = [
    "CALL_ID",
    "MISSING_EXIT",
    "REFUSED_EXIT",
    "SESSION",
    "Outcome",
    "exact",
    "execute",
    "header",
    "keep",
    "prepared",
    "record",
    "reduction",
    "shown",
    "summary",
]


def _text(data: bytes) -> str:
    return data.decode("utf-8", "surrogateescape")


def _bytes(text: str) -> bytes:
    return text.encode("utf-8", "surrogateescape")


def record(argv: Sequence[str], outcome: Outcome) -> list[Message]:
    """The span that keeps ``outcome`` exactly (contract 3)."""
    content: list[Text] = [Text(_text(outcome.stdout), hints={"stream": "stdout"})]
    if outcome.stderr:
        content.append(Text(_text(outcome.stderr), hints={"stream": "stderr"}))
    result = ToolResult(
        CALL_ID,
        list(content),
        is_error=outcome.code != 0,
        extra={"argv": list(argv), "exit_code": outcome.code},
    )
    return [Message("tool", [result])]


def exact(messages: Sequence[Message]) -> tuple[list[str], Outcome]:
    """The words and the outcome ``record`` archived; ``ValueError`` for another span."""
    if len(messages) != 1 or len(messages[0].parts) != 1:
        raise ValueError("not a shell output span")
    result = messages[0].parts[0]
    if not isinstance(result, ToolResult) or result.call_id != CALL_ID:
        raise ValueError("not a shell output span")
    streams = {
        part.hints.get("stream"): _bytes(part.text)
        for part in result.content
        if isinstance(part, Text)
    }
    outcome = Outcome(streams.get("stdout", b""), streams.get("stderr", b""), 0)
    code = result.extra.get("exit_code")
    argv = result.extra.get("argv")
    if not isinstance(code, int) or not isinstance(argv, list):
        raise ValueError("a shell output span without its exit code or words")
    return [str(word) for word in argv], Outcome(outcome.stdout, outcome.stderr, code)


def header(ref: str, shown: int, total: int) -> str:
    """The one line that tells the model the output was reduced on purpose, and how to get
    the rest."""
    return (
        f"[skillstate: output reduced on purpose ({shown:,} of {total:,} chars); "
        f"exact output: skillstate archive get {ref} ]"
    )


def reduction(family: str, outcome: Outcome) -> str | None:
    """The redacted reduction of stdout, or ``None`` to show it exactly."""
    text = outcome.stdout.decode("utf-8", "replace")
    reduced = reducers.reduce(family, text)
    return None if reduced is None else redact(reduced).text


def shown(reduced: str, ref: str, total: int) -> bytes:
    """What ``skillstate shell`` prints on stdout in place of a reduced output."""
    body = reduced if reduced.endswith("\n") else reduced + "\n"
    return (header(ref, len(body), total) + "\n" + body).encode()


async def keep(archive: Archive, argv: Sequence[str], outcome: Outcome) -> str:
    """Archive the exact record of ``outcome``; its ref. Raises when the store cannot."""
    data = canonical_span(record(argv, outcome))
    ref = ref_for(data)
    await archive.put(SESSION, ref, data, summary=summary(argv))
    return ref


def summary(argv: Sequence[str]) -> str:
    """The archive index's one-line summary of a shell output: its command line, cut."""
    return shlex.join(argv)[:200]
