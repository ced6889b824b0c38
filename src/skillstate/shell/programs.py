"""The table of programs the shell lane runs: for each, the subcommands allowed, the options
refused (they write, delete, follow forever or run other programs), and the reducer family of
its output.

An option is refused when it is one of ``short`` (a letter anywhere in a ``-abc`` cluster),
one of ``exact`` (single-dash long options, ``find -exec``), or a long option whose name is,
or abbreviates, one of ``long`` (git accepts ``--out`` for ``--output``). Every argument is
looked at, after ``--`` too: a refusal too many costs a reduction, one too few costs a file.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from skillstate.views.text import words

FAMILIES = ("diff", "git-status", "git-log", "listing", "tree", "grep", "text", "tests", "plain")


@dataclass(frozen=True, slots=True)
class Program:
    """One allowed program. ``subcommands`` maps each allowed leading argument sequence (empty
    for none needed) to the family of its output; the longest that matches wins."""

    subcommands: dict[tuple[str, ...], str]
    short: frozenset[str] = frozenset()
    exact: frozenset[str] = frozenset()
    long: tuple[str, ...] = ()

    def family_of(self, argv: Sequence[str]) -> str:
        lead = self._lead(argv)
        return "" if lead is None else self.subcommands[lead]

    def _lead(self, argv: Sequence[str]) -> tuple[str, ...] | None:
        for lead in sorted(self.subcommands, key=len, reverse=True):
            if tuple(argv[1 : 1 + len(lead)]) == lead:
                return lead
        return None

    def refusal(self, argv: Sequence[str]) -> str:
        """Why ``argv`` may not run, or ``""``."""
        lead = self._lead(argv)
        if lead is None:
            return f"{' '.join(argv[:2])!r} is not an allowed subcommand"
        for arg in argv[1 + len(lead) :]:
            reason = self._option_refusal(arg)
            if reason:
                return reason
        return ""

    def _option_refusal(self, arg: str) -> str:
        if not arg.startswith("-") or arg in ("-", "--"):
            return ""
        name = arg.split("=", 1)[0]
        if name in self.exact:
            return f"the option {name} is refused"
        if arg.startswith("--"):
            bare = name[2:]
            if any(bad.startswith(bare) for bad in self.long):
                return f"the option {name} is refused"
            return ""
        if set(arg[1:]) & self.short:
            return f"the option {arg} is refused"
        return ""


_GIT_LONG = ("output", "ext-diff", "exec", "upload-pack", "open-files-in-pager", "paginate")
_FIND = frozenset(words("-exec -execdir -ok -okdir -delete -fprint -fprint0 -fprintf -fls"))

PROGRAMS: dict[str, Program] = {
    "git": Program(
        {
            ("status",): "git-status",
            ("log",): "git-log",
            ("diff",): "diff",
            ("show",): "diff",
        },
        long=_GIT_LONG,
    ),
    "ls": Program({(): "listing"}),
    "find": Program({(): "listing"}, exact=_FIND),
    "tree": Program({(): "tree"}, short=frozenset("o"), long=("output",)),
    "wc": Program({(): "plain"}),
    "grep": Program({(): "grep"}),
    "rg": Program({(): "grep"}, long=("pre", "pre-glob")),
    "cat": Program({(): "text"}),
    "head": Program({(): "text"}),
    "tail": Program({(): "text"}, short=frozenset("fF"), long=("follow", "retry")),
    "pytest": Program({(): "tests"}, long=("pastebin",)),
    "python": Program({("-m", "pytest"): "tests"}, long=("pastebin",)),
    "python3": Program({("-m", "pytest"): "tests"}, long=("pastebin",)),
    "npm": Program({("test",): "tests", ("run", "test"): "tests"}),
    "cargo": Program(
        {("test",): "tests", ("clippy",): "grep"}, long=("fix", "allow-dirty", "allow-staged")
    ),
    "go": Program(
        {("test",): "tests", ("vet",): "grep"}, exact=frozenset({"-exec", "-toolexec", "-o"})
    ),
    "ruff": Program(
        {("check",): "grep"},
        short=frozenset("wo"),
        long=("fix", "unsafe-fixes", "add-noqa", "watch", "output-file"),
    ),
    "mypy": Program({(): "grep"}, long=("install-types",)),
    "flake8": Program({(): "grep"}, long=("output-file",)),
    "pylint": Program({(): "grep"}, long=("output",)),
    "eslint": Program({(): "grep"}, short=frozenset("o"), long=("fix", "output-file")),
}
"""The allowed programs, by the name they are called by (never a path)."""
