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
import subprocess
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from skillstate.archive import Archive, canonical_span, ref_for
from skillstate.conversation import Message, Text, ToolResult
from skillstate.integrations.shell import git
from skillstate.integrations.shell.programs import PROGRAMS
from skillstate.outputs.commands import reducers
from skillstate.outputs.redaction import redact

SESSION = "shell"
"""The archive index's session for the lane's outputs."""
CALL_ID = "skillstate-shell"
REFUSED_EXIT = 2
MISSING_EXIT = 127


@dataclass(frozen=True, slots=True)
class Outcome:
    """What a command wrote and how it ended."""

    stdout: bytes
    stderr: bytes
    code: int


@contextmanager
def prepared(
    argv: Sequence[str], cwd: Path, root: Path, environ: Mapping[str, str]
) -> Iterator[tuple[list[str], dict[str, str] | None]]:
    """The words and environment an allowed command runs with, for one run (contract 2):
    git's hardened, on a private copy of the index; any other's as they are, in the inherited
    environment (``None``)."""
    found = PROGRAMS["git"].use_of(argv) if argv[0] == "git" else None
    if found is None:
        yield list(argv), None
        return
    with git.private_index(cwd, git.environment(environ, root)) as env:
        yield git.hardened(argv, found[1]), env


def execute(argv: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None) -> Outcome:
    """Run ``argv`` in ``cwd`` with no shell; a program that cannot start ends as a shell's
    would (127, its reason on stderr)."""
    try:
        done = subprocess.run(
            list(argv), cwd=cwd, env=env, stdin=subprocess.DEVNULL, capture_output=True
        )
    except OSError as error:
        message = f"skillstate shell: {argv[0]}: {error.strerror or error}\n"
        return Outcome(b"", message.encode(), MISSING_EXIT)
    return Outcome(done.stdout, done.stderr, done.returncode)


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
    await archive.put(SESSION, ref, data, summary=shlex.join(argv)[:200])
    return ref
