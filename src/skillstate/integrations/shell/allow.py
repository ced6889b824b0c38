"""The shell lane's allowlist: which commands ``skillstate hook`` may rewrite to run through
``skillstate shell``, and which ``skillstate shell`` will run.

Contract. ``decide(command, root, cwd=...)`` allows only a command that is, in full, one
simple call of an allowed program (``programs.PROGRAMS``) whose every argument its table
admits, in a project root that may have anything allowed (``paths.root_refusal``). It refuses,
with the reason:

* anything the shell would do more with than run one program: ``; & | < > ( ) { } $ `` ``
  (chaining, pipes, redirects, heredocs, substitution, expansion) and ``\\ # !`` outside
  quotes, and ``~`` where the shell expands it (starting a word, after ``=`` or ``:``);
  ``$``, backticks, ``\\`` and ``!`` inside double quotes; a newline or carriage return
  anywhere; unbalanced quotes;
* a leading ``NAME=value`` (an environment assignment), a program named by a path, and any
  program or use not in the table (``sudo``, ``rm``, ``git push`` ...);
* an option, value or operand its program's table does not admit (``grammar.parse``);
* an unquoted glob word that holds anything but plain path characters, starts with ``/`` or
  holds ``..``; a word the program reads as a path (an operand, a ``PATH`` value, every
  reading of every word of a use that runs code: ``paths.embedded``) that leads out of the
  root (``paths.outside``);
* for git, a repository whose own config names a program (``git.repository_refusal``).

``Decision.runs_code`` marks an allowed use that runs code by design (test runners, linters):
``skillstate shell`` runs it once the host's user said yes, and the hook never answers
``allow`` for it. An allowed command comes with ``rendered``: the words quoted for a POSIX
shell, except an unquoted glob word, left unquoted so that the host's shell still expands it
(and the expansion is judged again when ``skillstate shell`` runs it).
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from skillstate.integrations.shell import git, paths
from skillstate.integrations.shell.grammar import FindGrammar, Kind, parse, parse_find
from skillstate.integrations.shell.programs import PROGRAMS, Use

_OUTSIDE = frozenset(";&|<>(){}$`\\#!")
_IN_DOUBLE = frozenset("$`\\!")
_LINE_ENDS = frozenset("\n\r")
_GLOB = frozenset("*?[")
_GLOB_WORD = re.compile(r"[A-Za-z0-9_.*?\[\]/=:+,@%-]+")
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*=")
_READ = frozenset({Kind.PATH, Kind.PATTERNS})


@dataclass(frozen=True, slots=True)
class Word:
    """One word of a command as the shell would pass it, and whether it held an unquoted glob
    character (the host's shell expands it)."""

    text: str
    glob: bool = False
    quoted: bool = False


@dataclass(frozen=True, slots=True)
class Decision:
    """Whether a command may run through ``skillstate shell``; ``family`` names its reducer;
    ``runs_code``: the host's user must say yes to it (never ``allow``)."""

    allowed: bool
    reason: str
    argv: tuple[str, ...] = ()
    family: str = ""
    rendered: str = ""
    runs_code: bool = False


@dataclass(frozen=True, slots=True)
class Place:
    """Where a command runs: the project ``root`` (resolved), its working directory ``cwd``
    (resolved, under the root), the home directory, and the environment git runs from."""

    root: Path
    cwd: Path
    home: Path
    environ: Mapping[str, str]

    @classmethod
    def of(
        cls,
        root: Path,
        cwd: Path | None = None,
        home: Path | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> Place:
        resolved = root.resolve()
        return cls(
            resolved,
            (resolved / cwd).resolve() if cwd is not None else resolved,
            (home or Path.home()).resolve(),
            os.environ if environ is None else environ,
        )


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


def decide(command: str, place: Place | Path) -> Decision:
    """Whether ``command``, run in ``place``, may go through ``skillstate shell``."""
    words = split(command)
    if isinstance(words, str):
        return refuse(words)
    return decide_words(words, _place(place))


def decide_argv(argv: Sequence[str], place: Place | Path) -> Decision:
    """The same judgement of words already split (what ``skillstate shell`` is given): the
    host's shell expanded any glob, so no word is read as one, and each is checked again."""
    if any(_LINE_ENDS & set(word) for word in argv):
        return refuse("a newline")
    return decide_words([Word(word) for word in argv], _place(place))


def _place(place: Place | Path) -> Place:
    return place if isinstance(place, Place) else Place.of(place)


def decide_words(words: Sequence[Word], place: Place) -> Decision:
    if not words:
        return refuse("an empty command")
    reason = paths.root_refusal(place.root, place.home)
    if not reason and paths.outside(".", place.cwd, place.root):
        reason = f"the working directory {place.cwd} is outside the project {place.root}"
    if reason:
        return refuse(reason)
    name = words[0].text
    if _ASSIGNMENT.match(name):
        return refuse("an environment assignment before the program")
    if words[0].glob or "/" in name:
        return refuse("a program named by a path or a glob")
    program = PROGRAMS.get(name)
    if program is None:
        return refuse(f"{name!r} is not an allowed program")
    argv = tuple(word.text for word in words)
    found = program.use_of(argv)
    if found is None:
        return refuse(f"{' '.join(argv[:2])!r} is not an allowed use")
    use, start = found
    reason = _judge(use, argv[start:], words[start:], place)
    if not reason and name == "git":
        reason = git.repository_refusal(place.cwd, place.root, place.environ)
    if reason:
        return refuse(reason)
    return Decision(True, "allowed", argv, use.family, _render(words), use.runs_code)


def _judge(use: Use, args: Sequence[str], words: Sequence[Word], place: Place) -> str:
    for word in words:
        reason = _glob_refusal(word)
        if reason:
            return reason
    if use.grammar is None:
        read = [text for arg in args for text in paths.embedded(arg)]
    else:
        parsed = (
            parse_find(use.grammar, args)
            if isinstance(use.grammar, FindGrammar)
            else parse(use.grammar, args)
        )
        if isinstance(parsed, str):
            return parsed
        read = [item.text for item in parsed if item.kind in _READ]
    for text in read:
        if paths.outside(text, place.cwd, place.root):
            return f"the path {text!r} is outside the project"
    return ""


def _glob_refusal(word: Word) -> str:
    if not word.glob:
        return ""
    if word.quoted:
        return f"the glob {word.text!r} is partly quoted"
    if not _GLOB_WORD.fullmatch(word.text) or word.text.startswith("/") or ".." in word.text:
        return f"the glob {word.text!r} may reach outside the project"
    return ""


def _render(words: Sequence[Word]) -> str:
    return " ".join(word.text if word.glob else shlex.quote(word.text) for word in words)
