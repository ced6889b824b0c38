"""The allowlist's tables, option by option: each admitted option is allowed with a value of its
kind; each that reads a path is refused with one outside the project; and each is read by the
real program (where it is installed) as the table says, so that a value the table takes as
text is never read by the program as a file, nor a flag's neighbour as its value. The tables
themselves are reviewed text (tests/fixtures/shell/tables.txt)."""

from __future__ import annotations

import getpass
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from skillstate.integrations.shell import Place, decide_argv
from skillstate.integrations.shell.grammar import FindGrammar, Kind, Option
from skillstate.integrations.shell.programs import PROGRAMS, describe
from skillstate.integrations.shell.run import execute, prepared

TABLES = Path(__file__).parents[2] / "fixtures" / "shell" / "tables.txt"
PROBE = "zzprobe"
"""A text value: a program may refuse it as its option's value, never read it as a file."""
SPECIAL = {"-user": getpass.getuser(), "-group": "root", "-fstype": "ext4", "-type": "f"}


def test_the_tables_are_the_reviewed_ones() -> None:
    """A change to a table shows as a diff of this file: regenerate it with ``python -m
    skillstate.integrations.shell.tables > tests/fixtures/shell/tables.txt``, and review it."""
    assert describe() == TABLES.read_text()


def _value(spelling: str, option: Option) -> str:
    if spelling in SPECIAL:
        return SPECIAL[spelling]
    if option.kind is Kind.CHOICE:
        return min(option.choices)
    values = {Kind.PATH: "a.txt", Kind.PATTERNS: "patterns.txt", Kind.NUMBER: "3"}
    return values.get(option.kind, "%h %s" if option.kind is Kind.FORMAT else PROBE)


def _words(spelling: str, option: Option, value: str) -> list[str]:
    if option.kind is Kind.FLAG:
        return [spelling]
    if option.optional:
        return [f"{spelling}={value}" if spelling.startswith("--") else spelling + value]
    return [spelling, value]


def _cases() -> Iterator[tuple[str, list[str], list[str], str, Option]]:
    """(id, the words before, after, the spelling and its option) for every admitted option of
    every read-only use."""
    for name, program in PROGRAMS.items():
        for lead, use in program.uses.items():
            grammar = use.grammar
            if grammar is None:
                continue
            before = [name, *lead]
            if isinstance(grammar, FindGrammar):
                for spelling, option in grammar.primaries.items():
                    yield f"find {spelling}", [*before, "."], [], spelling, option
                continue
            operands = {
                "grep": ["x", "a.txt"],
                "rg": ["x", "a.txt"],
                "tree": ["."],
                "git": [],
            }.get(name, ["a.txt"])
            for spelling, option in grammar.options.items():
                yield " ".join([*before, spelling]), before, operands, spelling, option


CASES = list(_cases())


@pytest.fixture
def project(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    (root / "a.txt").write_text("x one\ny two\nx three\n")
    (root / "patterns.txt").write_text("x\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], cwd=root, check=True)
    subprocess.run([*git, "add", "a.txt"], cwd=root, check=True)
    subprocess.run([*git, "commit", "-qm", "one"], cwd=root, check=True)
    (root / "a.txt").write_text("x one\ny two\nx four\n")
    return root


@pytest.mark.parametrize(
    ("before", "after", "spelling", "option"),
    [case[1:] for case in CASES],
    ids=[case[0] for case in CASES],
)
def test_each_admitted_option_is_allowed_and_read_as_the_table_says(
    project: Path, before: list[str], after: list[str], spelling: str, option: Option
) -> None:
    argv = [*before, *_words(spelling, option, _value(spelling, option)), *after]
    decision = decide_argv(argv, project)
    assert decision.allowed and not decision.runs_code, decision.reason
    if shutil.which(argv[0]) is None:
        return
    environ = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent"}
    with prepared(decision.argv, project, project, environ) as (words, env):
        outcome = execute(["timeout", "10", *words], project, env)
    said = outcome.stderr.decode(errors="replace")
    assert outcome.code != 124, f"{argv} did not end"
    for complaint in ("unrecognized option", "invalid option", "unknown option", "requires an"):
        assert complaint not in said, (argv, said)
    for line in said.splitlines():  # the value read as a file or an operand: not as the table says
        if PROBE in line:
            for sign in ("No such file", "cannot access", "cannot open", "ambiguous argument"):
                assert sign not in line, (argv, said)


@pytest.mark.parametrize(
    ("before", "after", "spelling", "option"),
    [case[1:] for case in CASES if case[4].kind in (Kind.PATH, Kind.PATTERNS)],
    ids=[case[0] for case in CASES if case[4].kind in (Kind.PATH, Kind.PATTERNS)],
)
def test_each_option_that_reads_a_file_is_refused_one_outside(
    project: Path, before: list[str], after: list[str], spelling: str, option: Option
) -> None:
    (project.parent / "secret").write_text("s")
    (project / "link").symlink_to(project.parent / "secret")
    for outside in ("/etc/passwd", "../secret", "link"):
        argv = [*before, *_words(spelling, option, outside), *after]
        assert not decide_argv(argv, Place.of(project)).allowed, argv
