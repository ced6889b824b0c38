"""How an allowed program reads its words: the options it is admitted with, each with the kind
of value it takes, and the reading of a command's words against them.

Contract. ``parse(grammar, args)`` reads ``args`` as GNU ``getopt_long`` does: options and
operands in any order; ``--`` ends the options; a short cluster ``-abc`` letter by letter, a
letter that takes a value taking the rest of the word, else the next word (an optional value
only attached: ``-M50%``, ``--color=never``); a long option as ``--name=value``, or
``--name value`` where its value is required. It returns every value and operand with the kind
the program reads it as, or the reason the words are not admitted:

* an option not in the table. Only the names written in the table are admitted, so an
  abbreviation (``--out``, which git reads as ``--output``) is refused; an exact name is never
  read as another;
* a value not of its kind (a number that is not one, a choice not listed, a git format that
  verifies signatures);
* a flag given a value, a value missing, an operand starting with ``+`` (``tail +1f`` follows
  for ever), a ``-`` operand (standard input).

``parse_find`` reads ``find``'s own grammar: start points, then an expression of the primaries
in its table. Nothing here touches the disk: which operands and values name files is the
answer, and the caller checks where they lead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum


class Kind(StrEnum):
    """What an option's value, or an operand, is to the program."""

    FLAG = "flag"
    PATH = "path"
    """Names a file or folder the program reads."""
    PATTERNS = "patterns"
    """A file of patterns (``grep -f``): a path, and the operands are then all paths."""
    PATTERN = "pattern"
    """A pattern (``grep -e``): the operands are then all paths."""
    NUMBER = "number"
    TEXT = "text"
    """Matched or printed, never opened: a glob, a date, an author."""
    FORMAT = "format"
    """A git pretty format: text, but ``%G`` makes git run gpg to verify signatures."""
    CHOICE = "choice"


@dataclass(frozen=True, slots=True)
class Option:
    """One admitted option: the kind of its value, whether the value is only attached
    (``--color[=WHEN]``), and for a choice the values admitted."""

    kind: Kind = Kind.FLAG
    optional: bool = False
    choices: frozenset[str] = frozenset()


@dataclass(frozen=True, slots=True)
class Grammar:
    """A program's admitted options, by spelling (``-n``, ``--lines``). ``pattern_first``: the
    first operand is a pattern unless an option gave one (grep, rg) or one of ``pattern_free``
    says there is none (``rg --files``). ``counts``: ``-20`` is a
    count (head, tail, grep, git log). ``clusters``: whether short options may share a word
    (tree reads ``-Io FILE`` as two options taking the next two words, so it may not)."""

    options: Mapping[str, Option]
    pattern_first: bool = False
    pattern_free: frozenset[str] = frozenset()
    counts: bool = False
    clusters: bool = True


@dataclass(frozen=True, slots=True)
class Item:
    """A value or operand the program reads, with the option that took it (``""`` for an
    operand)."""

    kind: Kind
    text: str
    option: str = ""


_NUMBER = re.compile(r"[+-]?\d+(?:[bcwkKmMgGtTpPeE]|[kKmMgGtTpPeE]i?B)?")
_COUNT = re.compile(r"-\d+")
_SIGNATURE = re.compile(r"%[-+ ]*G")
_SPEC = re.compile(r"(-{1,2}[^\s=\[]+)(\[?=)?([A-Za-z0-9|_,.-]*)\]?")


def grammar(spec: str, *, pattern_free: str = "", **shape: bool) -> Grammar:
    """A grammar from a spec: whitespace-separated entries, each an option's spellings joined
    by ``,`` then, for a value, ``=KIND`` (required) or ``[=KIND]`` (attached only), where KIND
    is ``PATH``, ``PATTERN``, ``PATTERNS``, ``NUMBER``, ``TEXT``, ``FORMAT`` or choices ``a|b``.
    ``-n,--lines=NUMBER -q,--quiet --color[=never|always|auto]``."""
    options: dict[str, Option] = {}
    for entry in spec.split():
        match = _SPEC.fullmatch(entry)
        if match is None:
            raise ValueError(f"not an option spec: {entry!r}")
        names, form, value = match.groups()
        option = _option(form or "", value)
        for name in names.split(","):
            options[name] = option
    return Grammar(options, pattern_free=frozenset(pattern_free.split()), **shape)


def _option(form: str, value: str) -> Option:
    if not form:
        return Option()
    optional = form == "[="
    if "|" in value or value.islower():
        return Option(Kind.CHOICE, optional, frozenset(value.split("|")))
    return Option(Kind[value], optional)


def parse(grammar: Grammar, args: Sequence[str]) -> list[Item] | str:
    """The items ``args`` give the program, or why they are not admitted (the contract)."""
    items: list[Item] = []
    operands: list[str] = []
    pattern_given = False
    index = 0
    while index < len(args):
        word = args[index]
        index += 1
        if word == "--":
            operands.extend(args[index:])
            break
        if not word.startswith("-") or word == "-":
            operands.append(word)
            continue
        taken = _option_items(grammar, word, args[index] if index < len(args) else None)
        if isinstance(taken, str):
            return taken
        found, used_next = taken
        index += used_next
        items.extend(found)
        pattern_given = pattern_given or any(
            item.kind in (Kind.PATTERN, Kind.PATTERNS) or item.option in grammar.pattern_free
            for item in found
        )
    for position, operand in enumerate(operands):
        reason = _operand_refusal(operand)
        if reason:
            return reason
        first = position == 0 and grammar.pattern_first and not pattern_given
        items.append(Item(Kind.PATTERN if first else Kind.PATH, operand))
    return items


def _operand_refusal(operand: str) -> str:
    if operand == "-":
        return "standard input as an operand"
    if operand.startswith("+"):
        return f"the operand {operand!r} starts with '+' (tail reads it as an option)"
    return ""


def _option_items(grammar: Grammar, word: str, after: str | None) -> tuple[list[Item], int] | str:
    """The items of one option word, and how many following words its value took."""
    if word.startswith("--"):
        name, eq, value = word.partition("=")
        return _valued(grammar, name, value if eq else None, after)
    if grammar.counts and _COUNT.fullmatch(word):
        return [Item(Kind.NUMBER, word[1:], word)], 0
    if not grammar.clusters and len(word) > 2:
        return f"the option word {word!r} (this program takes one short option a word)"
    items: list[Item] = []
    for position in range(1, len(word)):
        name = "-" + word[position]
        option = grammar.options.get(name)
        if option is None:
            return f"the option {name} (in {word!r}) is not admitted"
        if option.kind is Kind.FLAG:
            items.append(Item(Kind.FLAG, "", name))
            continue
        rest = word[position + 1 :]
        taken = _valued(grammar, name, rest if rest else None, after)
        if isinstance(taken, str):
            return taken
        return items + taken[0], taken[1]
    return items, 0


def _valued(
    grammar: Grammar, name: str, attached: str | None, after: str | None
) -> tuple[list[Item], int] | str:
    option = grammar.options.get(name)
    if option is None:
        return f"the option {name} is not admitted"
    if option.kind is Kind.FLAG:
        if attached is not None:
            return f"the option {name} takes no value"
        return [Item(Kind.FLAG, "", name)], 0
    used = 0
    value = attached
    if value is None and not option.optional:
        if after is None:
            return f"the option {name} wants a value"
        value, used = after, 1
    if value is None:
        return [Item(Kind.FLAG, "", name)], 0
    reason = value_refusal(option, value)
    if reason:
        return f"the option {name}: {reason}"
    return [Item(option.kind, value, name)], used


def value_refusal(option: Option, value: str) -> str:
    """Why ``value`` is not of ``option``'s kind, or ``""``."""
    if option.kind is Kind.NUMBER and not _NUMBER.fullmatch(value):
        return f"{value!r} is not a number"
    if option.kind is Kind.CHOICE and value not in option.choices:
        return f"{value!r} is not one of {', '.join(sorted(option.choices))}"
    if option.kind is Kind.FORMAT and _SIGNATURE.search(value):
        return "%G (with any modifier) verifies signatures, which runs gpg"
    return ""


@dataclass(frozen=True, slots=True)
class FindGrammar:
    """``find``'s grammar: the leading options admitted, the primaries (``-name``, each with
    the kind of its value) and the operators (``-o``, ``!``, ``(``) of its expression."""

    leading: frozenset[str]
    primaries: Mapping[str, Option]
    operators: frozenset[str] = field(default_factory=frozenset)


def parse_find(grammar: FindGrammar, args: Sequence[str]) -> list[Item] | str:
    """``find [-P] [start...] [expression]``: the start points are paths; the expression only
    admitted primaries, with their values, and operators (the contract)."""
    index = 0
    while index < len(args) and args[index] in grammar.leading:
        index += 1
    items: list[Item] = []
    while index < len(args) and not _expression_word(grammar, args[index]):
        reason = _operand_refusal(args[index])
        if reason:
            return reason
        items.append(Item(Kind.PATH, args[index]))
        index += 1
    while index < len(args):
        word = args[index]
        index += 1
        if word in grammar.operators:
            continue
        option = grammar.primaries.get(word)
        if option is None:
            return f"the find primary {word!r} is not admitted"
        if option.kind is Kind.FLAG:
            continue
        if index == len(args):
            return f"the find primary {word} wants a value"
        value = args[index]
        index += 1
        reason = value_refusal(option, value)
        if reason:
            return f"the find primary {word}: {reason}"
        items.append(Item(option.kind, value, word))
    return items


def _expression_word(grammar: FindGrammar, word: str) -> bool:
    return word.startswith("-") or word in grammar.operators


def find_grammar(leading: str, spec: str, operators: str) -> FindGrammar:
    """A ``FindGrammar`` from the same spec form as ``grammar`` (a primary's value is always
    the next word)."""
    return FindGrammar(
        frozenset(leading.split()), dict(grammar(spec).options), frozenset(operators.split())
    )
