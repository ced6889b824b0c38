"""The shell lane's allowlist: which commands ``skillstate hook`` may rewrite to run through
``skillstate shell``, and which ``skillstate shell`` will run.

Contract. ``decide(command, project)`` is pure apart from resolving paths, and allows only a
command that is, in full, one simple call of an allowed program (``PROGRAMS``) with allowed
arguments. It refuses, with the reason:

* anything the shell would do more with than run one program: ``; & | < > ( ) { } $ `` ``
  (chaining, pipes, redirects, heredocs, substitution, expansion) and ``\\ # !`` outside
  quotes, and ``~`` where the shell expands it (starting a word, after ``=`` or ``:``);
  ``$``, backticks, ``\\`` and ``!`` inside double quotes; a newline or carriage return
  anywhere; unbalanced quotes;
* a leading ``NAME=value`` (an environment assignment), a program named by a path, and any
  program or subcommand not in the table (``sudo``, ``rm``, ``git push`` ...);
* the options of an allowed program that write, delete or run other programs
  (``find -exec/-delete``, ``git diff --ext-diff/--output``, ``rg --pre``, ``ruff --fix`` ...),
  a long option matching them by prefix too, since git and others accept abbreviations;
* an unquoted glob word that holds anything but plain path characters, starts with ``/`` or
  holds ``..``; any argument (or ``--option=value``'s value, or the value attached to a short
  option, ``-f/etc/x``) that starts with ``~``, or is absolute, holds ``..`` or names a link,
  and resolves outside ``project``.

An allowed command comes with ``rendered``: the words quoted for a POSIX shell, except an
unquoted glob word, left unquoted so that the host's shell still expands it (and the expansion
is checked again when ``skillstate shell`` runs it).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from skillstate.shell.programs import PROGRAMS, Program

_OUTSIDE = frozenset(";&|<>(){}$`\\#!")
_IN_DOUBLE = frozenset("$`\\!")
_LINE_ENDS = frozenset("\n\r")
_GLOB = frozenset("*?[")
_GLOB_WORD = re.compile(r"[A-Za-z0-9_.*?\[\]/=:+,@%-]+")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")


@dataclass(frozen=True, slots=True)
class Word:
    """One word of a command as the shell would pass it, and whether it held an unquoted glob
    character (the host's shell expands it)."""

    text: str
    glob: bool = False
    quoted: bool = False


@dataclass(frozen=True, slots=True)
class Decision:
    """Whether a command may run through ``skillstate shell``; ``family`` names its reducer."""

    allowed: bool
    reason: str
    argv: tuple[str, ...] = ()
    family: str = ""
    rendered: str = ""


def refuse(reason: str) -> Decision:
    return Decision(False, reason)


def split(command: str) -> list[Word] | str:
    """The words of ``command``, or the reason it is not one simple call."""
    words: list[Word] = []
    text: list[str] = []
    quote = ""
    started = glob = quoted = False
    for char in command:
        if char in _LINE_ENDS:
            return "a newline"
        if quote == "'":
            if char == "'":
                quote = ""
            else:
                text.append(char)
        elif quote == '"':
            if char in _IN_DOUBLE:
                return f"{char!r} inside double quotes"
            if char == '"':
                quote = ""
            else:
                text.append(char)
        elif char in "'\"":
            quote, started, quoted = char, True, True
        elif char in " \t":
            if started:
                words.append(Word("".join(text), glob, quoted))
            text, started, glob, quoted = [], False, False, False
        elif char in _OUTSIDE:
            return f"the shell metacharacter {char!r}"
        elif char == "~" and (not started or text[-1:] in (["="], [":"])):
            return "a tilde the shell would expand"
        else:
            text.append(char)
            started = True
            glob = glob or char in _GLOB
    if quote:
        return "unbalanced quotes"
    if started:
        words.append(Word("".join(text), glob, quoted))
    return words


def decide(command: str, project: Path) -> Decision:
    """Whether ``command``, run in ``project``, may go through ``skillstate shell``."""
    words = split(command)
    if isinstance(words, str):
        return refuse(words)
    return decide_words(words, project)


def decide_argv(argv: Sequence[str], project: Path) -> Decision:
    """The same judgement of words already split (what ``skillstate shell`` is given): the
    host's shell expanded any glob, so no word is read as one, and each is checked as a path."""
    if any(_LINE_ENDS & set(word) for word in argv):
        return refuse("a newline")
    return decide_words([Word(word) for word in argv], project)


def decide_words(words: Sequence[Word], project: Path) -> Decision:
    if not words:
        return refuse("an empty command")
    name = words[0].text
    if _ASSIGNMENT.match(name):
        return refuse("an environment assignment before the program")
    if words[0].glob or "/" in name:
        return refuse("a program named by a path or a glob")
    program = PROGRAMS.get(name)
    if program is None:
        return refuse(f"{name!r} is not an allowed program")
    argv = tuple(word.text for word in words)
    reason = _judge(program, argv, words, project)
    if reason:
        return refuse(reason)
    family = program.family_of(argv)
    return Decision(True, "allowed", argv, family, _render(words))


def _judge(program: Program, argv: tuple[str, ...], words: Sequence[Word], project: Path) -> str:
    reason = program.refusal(argv)
    if reason:
        return reason
    root = project.resolve()
    for word in words[1:]:
        reason = _glob_refusal(word) or _path_refusal(word.text, project, root)
        if reason:
            return reason
    return ""


def _glob_refusal(word: Word) -> str:
    if not word.glob:
        return ""
    if word.quoted:
        return f"the glob {word.text!r} is partly quoted"
    if not _GLOB_WORD.fullmatch(word.text) or word.text.startswith("/") or ".." in word.text:
        return f"the glob {word.text!r} may reach outside the project"
    return ""


def _path_refusal(text: str, project: Path, root: Path) -> str:
    candidates = [text]
    if text.startswith("-") and "=" in text:
        candidates.append(text.split("=", 1)[1])
    if text.startswith("-") and not text.startswith("--") and len(text) > 2:
        candidates.append(text[2:])  # a short option's attached value: grep -f/etc/x
    for candidate in candidates:
        if candidate.startswith("~"):
            return f"the path {candidate!r} is outside the project"
        path = project / candidate
        if not (candidate.startswith("/") or ".." in Path(candidate).parts or _exists(path)):
            continue
        resolved = path.resolve()
        if resolved != root and root not in resolved.parents:
            return f"the path {candidate!r} is outside the project"
    return ""


def _exists(path: Path) -> bool:
    """Whether ``path`` names something (a link included: it may lead outside)."""
    try:
        return path.is_symlink() or path.exists()
    except (OSError, ValueError):
        return False


def _render(words: Sequence[Word]) -> str:
    return " ".join(word.text if word.glob else shlex.quote(word.text) for word in words)
