"""The programs the shell lane runs, each use with its reducer family and the table of the
options it is admitted with (``grammar.grammar``'s spec form), reviewed against each program's
own manual (GNU coreutils 9, grep 3.8, findutils 4.9, ripgrep 14, tree 2.1, git 2.39).

Read-only by construction: a table lists what is admitted, never what is refused, so an option
left out (a new one, an abbreviation, a misspelling) is refused. What was left out on purpose,
because it writes, deletes, runs a program, reaches the network, follows links out of the
project or never ends:

* ls ``-L -H`` (follow links); grep ``-R`` (follows every link while recursing); rg ``-L``,
  ``--pre``, ``--pre-glob``, ``-z`` (runs decompressors), ``--hostname-bin`` (runs a program);
  tree ``-l`` (follows), ``-o`` (writes), ``-R``/``-H`` (writes 00Tree.html files),
  ``--fromfile``; wc ``--files0-from`` (names come from a file); tail ``-f -F --follow --retry
  --pid -s`` and ``+N`` operands (follow); find ``-L -H -follow -exec -execdir -ok -okdir
  -delete -fprint -fprint0 -fprintf -fls -files0-from -D -O``.
* git: every global option but ``--no-pager``/``-P`` (so no ``-c``, ``-C``, ``--git-dir``,
  ``--exec-path``), ``--output``, ``--ext-diff``, ``--textconv``, ``-O`` (reads a file),
  ``--no-index`` (compares any two files), ``-L`` (a path inside its value),
  ``--show-signature`` and ``%G`` formats (run gpg), ``--stdin``, status ``-v`` (a diff that
  may run a textconv program), ``--ignore-submodules`` (``skillstate shell`` sets it to
  ``all``: a submodule's config is not checked); ``skillstate shell`` also runs git with
  programs configured away (``shell/git.py``).

A use whose grammar is ``None`` runs code by design (a test runner, a linter with plugins or a
config that may name a program): any options, never answered ``allow`` (``hook.py``); the host
asks its user about it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from skillstate.integrations.shell.grammar import (
    FindGrammar,
    Grammar,
    Kind,
    Option,
    find_grammar,
    grammar,
)

FAMILIES = ("diff", "git-status", "git-log", "listing", "tree", "grep", "text", "tests", "plain")


@dataclass(frozen=True, slots=True)
class Use:
    """One allowed use of a program: the family of its output and its grammar; ``None`` for
    a use that runs code (any options: the host's user decides)."""

    family: str
    grammar: Grammar | FindGrammar | None = None

    @property
    def runs_code(self) -> bool:
        return self.grammar is None


@dataclass(frozen=True, slots=True)
class Program:
    """One allowed program: its uses by their leading words (``("diff",)`` for ``git diff``;
    ``()`` for none), the longest that matches winning, and the words admitted before them
    (git's ``--no-pager``)."""

    uses: Mapping[tuple[str, ...], Use]
    leading: frozenset[str] = frozenset()

    def use_of(self, argv: Sequence[str]) -> tuple[Use, int] | None:
        """The use ``argv`` makes and where its own arguments start, or ``None``."""
        start = 1
        while start < len(argv) and argv[start] in self.leading:
            start += 1
        for lead in sorted(self.uses, key=len, reverse=True):
            if tuple(argv[start : start + len(lead)]) == lead:
                return self.uses[lead], start + len(lead)
        return None


_COLOR = "--color[=always|never|auto|yes|no|force|none|tty|if-tty]"

LS = grammar(
    f"""
    -a,--all -A,--almost-all -b,--escape -B,--ignore-backups -c -C -d,--directory -D,--dired
    -f -F -g -G,--no-group -h,--human-readable --si -i,--inode -k,--kibibytes -l -m
    -n,--numeric-uid-gid -N,--literal -o -p -q,--hide-control-chars --show-control-chars
    -Q,--quote-name -r,--reverse -R,--recursive -s,--size -S -t -u -U -v -x -X -Z,--context -1
    --author --full-time --group-directories-first --block-size=TEXT {_COLOR}
    --classify[=always|never|auto|yes|no|force|none|tty|if-tty]
    --format=across|commas|horizontal|long|single-column|verbose|vertical
    --hide=TEXT -I,--ignore=TEXT --indicator-style=none|slash|file-type|classify
    --quoting-style=TEXT --sort=none|size|time|version|extension|width --time=TEXT
    --time-style=TEXT -T,--tabsize=NUMBER -w,--width=NUMBER
    """
)
CAT = grammar(
    """
    -A,--show-all -b,--number-nonblank -e -E,--show-ends -n,--number -s,--squeeze-blank -t
    -T,--show-tabs -u -v,--show-nonprinting
    """
)
_HEAD = "-c,--bytes=NUMBER -n,--lines=NUMBER -q,--quiet,--silent -v,--verbose -z,--zero-terminated"
HEAD = grammar(_HEAD, counts=True)
TAIL = grammar(_HEAD, counts=True)
WC = grammar(
    """
    -c,--bytes -m,--chars -l,--lines -L,--max-line-length -w,--words
    """
)
GREP = grammar(
    f"""
    -E,--extended-regexp -F,--fixed-strings -G,--basic-regexp -P,--perl-regexp
    -i,-y,--ignore-case --no-ignore-case -v,--invert-match -w,--word-regexp -x,--line-regexp
    -c,--count -L,--files-without-match -l,--files-with-matches -o,--only-matching
    -q,--quiet,--silent -s,--no-messages -b,--byte-offset -H,--with-filename
    -h,--no-filename -n,--line-number -T,--initial-tab -Z,--null -z,--null-data -a,--text -I
    -r,--recursive -U,--binary --line-buffered
    -e,--regexp=PATTERN -f,--file=PATTERNS -m,--max-count=NUMBER -A,--after-context=NUMBER
    -B,--before-context=NUMBER -C,--context=NUMBER --label=TEXT --include=TEXT
    --exclude=TEXT --exclude-dir=TEXT --exclude-from=PATH
    --binary-files=binary|text|without-match -d,--directories=read|skip|recurse
    -D,--devices=read|skip {_COLOR} {_COLOR.replace("color", "colour")}
    """,
    pattern_first=True,
    counts=True,
)
RG = grammar(
    """
    -i,--ignore-case -S,--smart-case -s,--case-sensitive -w,--word-regexp -x,--line-regexp
    -v,--invert-match -c,--count --count-matches -l,--files-with-matches --files-without-match
    -o,--only-matching -F,--fixed-strings -n,--line-number -N,--no-line-number --column
    --no-column --heading --no-heading -H,--with-filename -I,--no-filename -.,--hidden
    --no-hidden --no-ignore --no-ignore-vcs --no-ignore-dot --no-ignore-parent
    --no-ignore-global --no-ignore-exclude --no-ignore-files -u,--unrestricted -U,--multiline
    --multiline-dotall -P,--pcre2 --files --json --vimgrep -0,--null -a,--text --trim
    -q,--quiet --stats --type-list --no-messages -p,--pretty --no-config -b,--byte-offset
    --crlf --passthru --sort-files --no-unicode --one-file-system
    -e,--regexp=PATTERN -f,--file=PATTERNS -g,--glob=TEXT --iglob=TEXT -t,--type=TEXT
    -T,--type-not=TEXT -A,--after-context=NUMBER -B,--before-context=NUMBER
    -C,--context=NUMBER -m,--max-count=NUMBER -d,--max-depth=NUMBER --max-filesize=NUMBER
    -M,--max-columns=NUMBER -j,--threads=NUMBER -r,--replace=TEXT --ignore-file=PATH
    --sort=path|modified|accessed|created|none --sortr=path|modified|accessed|created|none
    --color=never|auto|always|ansi --engine=default|pcre2|auto -E,--encoding=TEXT
    """,
    pattern_first=True,
    pattern_free="--files --type-list",
)
TREE = grammar(
    """
    -a -d -f -i -x -F -q -N -Q -p -u -g -s -h --si --du -D -v -t -c -U -r --dirsfirst
    --filesfirst -n -C -A -S --noreport --inodes --device --prune -J -X --gitignore
    --matchdirs --ignore-case -L=NUMBER -P=TEXT -I=TEXT --charset=TEXT --filelimit=NUMBER
    --timefmt=TEXT --sort=name|version|size|mtime|ctime|none
    """,
    clusters=False,
)
FIND = find_grammar(
    "-P",
    """
    -print -print0 -ls -prune -quit -depth -empty -readable -writable -executable -nouser
    -nogroup -true -false -mount -xdev -noleaf -daystart -ignore_readdir_race
    -noignore_readdir_race
    -name=TEXT -iname=TEXT -path=TEXT -ipath=TEXT -wholename=TEXT -iwholename=TEXT
    -regex=TEXT -iregex=TEXT -lname=TEXT -ilname=TEXT -regextype=TEXT -printf=TEXT
    -type=TEXT -perm=TEXT -user=TEXT -group=TEXT -fstype=TEXT
    -maxdepth=NUMBER -mindepth=NUMBER -size=NUMBER -mtime=NUMBER -mmin=NUMBER -atime=NUMBER
    -amin=NUMBER -ctime=NUMBER -cmin=NUMBER -used=NUMBER -links=NUMBER -inum=NUMBER
    -uid=NUMBER -gid=NUMBER -newer=PATH -anewer=PATH -cnewer=PATH -samefile=PATH
    """,
    "-o -or -a -and -not ! ( ) ,",
)

_DIFF = f"""
    -p,-u,--patch -s,--no-patch --raw --patch-with-raw --patch-with-stat --numstat --shortstat
    --summary --name-only --name-status --compact-summary --full-index --binary --minimal
    --patience --histogram --no-renames --find-copies-harder -R -a,--text
    -b,--ignore-space-change -w,--ignore-all-space --ignore-space-at-eol --ignore-blank-lines
    --ignore-cr-at-eol -W,--function-context --no-color --no-ext-diff --no-textconv
    --exit-code --quiet --no-prefix --pickaxe-all --pickaxe-regex -z --check --no-relative
    --abbrev[=NUMBER] --color-words[=TEXT]
    --word-diff[=color|plain|porcelain|none] --word-diff-regex=TEXT {_COLOR} --color-moved[=TEXT]
    --diff-algorithm=patience|minimal|histogram|myers|default --diff-filter=TEXT --stat[=TEXT]
    --relative[=PATH] --src-prefix=TEXT --dst-prefix=TEXT -U,--unified=NUMBER
    --inter-hunk-context=NUMBER -M,--find-renames[=TEXT] -C,--find-copies[=TEXT]
    -B,--break-rewrites[=TEXT] -S=TEXT -G=TEXT --anchored=TEXT
"""
_LOG = """
    -n,--max-count=NUMBER --skip=NUMBER --since,--after,--until,--before=TEXT
    --author,--committer,--grep=TEXT --all-match --invert-grep -i,--regexp-ignore-case
    -E,--extended-regexp -F,--fixed-strings --basic-regexp -P,--perl-regexp --merges
    --no-merges --first-parent --all --branches[=TEXT] --tags[=TEXT] --remotes[=TEXT]
    --exclude=TEXT --oneline --abbrev-commit --no-abbrev-commit --format=FORMAT
    --pretty[=FORMAT] --date=TEXT --relative-date --decorate[=short|full|auto|no]
    --no-decorate --graph --reverse --topo-order --date-order --author-date-order
    --left-right --cherry-pick --cherry-mark --cherry --boundary --source --parents --children
    --follow --full-diff --no-notes -g,--walk-reflogs --mailmap --use-mailmap --no-mailmap
    --no-walk[=sorted|unsorted] --do-walk -m --cc -c --diff-merges=TEXT -t --remove-empty
    --simplify-by-decoration --dense --sparse --full-history --simplify-merges
"""
_STATUS = """
    -s,--short -b,--branch --show-stash --porcelain[=v1|v2] --long -z --ahead-behind
    --no-ahead-behind --renames --no-renames --find-renames[=TEXT]
    -u,--untracked-files[=no|normal|all]
    --ignored[=traditional|no|matching]
"""

GIT_DIFF = grammar(_DIFF)
GIT_LOG = grammar(_DIFF + _LOG, counts=True)
GIT_STATUS = grammar(_STATUS)

_RUNS = Use("tests")
_LINTS = Use("grep")

PROGRAMS: dict[str, Program] = {
    "git": Program(
        {
            ("status",): Use("git-status", GIT_STATUS),
            ("log",): Use("git-log", GIT_LOG),
            ("diff",): Use("diff", GIT_DIFF),
            ("show",): Use("diff", GIT_LOG),
        },
        leading=frozenset({"--no-pager", "-P"}),
    ),
    "ls": Program({(): Use("listing", LS)}),
    "find": Program({(): Use("listing", FIND)}),
    "tree": Program({(): Use("tree", TREE)}),
    "wc": Program({(): Use("plain", WC)}),
    "grep": Program({(): Use("grep", GREP)}),
    "rg": Program({(): Use("grep", RG)}),
    "cat": Program({(): Use("text", CAT)}),
    "head": Program({(): Use("text", HEAD)}),
    "tail": Program({(): Use("text", TAIL)}),
    # Runs code by design: the project's tests, build scripts, plugins, configs naming programs.
    "pytest": Program({(): _RUNS}),
    "python": Program({("-m", "pytest"): _RUNS}),
    "python3": Program({("-m", "pytest"): _RUNS}),
    "npm": Program({("test",): _RUNS, ("run", "test"): _RUNS}),
    "cargo": Program({("test",): _RUNS, ("clippy",): _LINTS}),
    "go": Program({("test",): _RUNS, ("vet",): _LINTS}),
    "ruff": Program({("check",): _LINTS}),
    "mypy": Program({(): _LINTS}),
    "flake8": Program({(): _LINTS}),
    "pylint": Program({(): _LINTS}),
    "eslint": Program({(): _LINTS}),
}
"""The allowed programs, by the name they are called by (never a path)."""


def uses(*, runs_code: bool) -> list[str]:
    """The allowed uses, as commands (``git diff``, ``python -m pytest``), that run code or
    that do not: what ``skillstate doctor`` says the hook gives ``allow`` and what it leaves
    to the user."""
    return [
        " ".join((name, *lead))
        for name, program in PROGRAMS.items()
        for lead, use in program.uses.items()
        if use.runs_code is runs_code
    ]


def describe() -> str:
    """Every table, one line per use and one per option with its spellings and value: the
    text tests/fixtures/shell/tables.txt holds, so a change to a table is a reviewed diff."""
    lines: list[str] = []
    for name, program in PROGRAMS.items():
        for lead, use in program.uses.items():
            command = " ".join((name, *lead))
            if use.grammar is None:
                lines.append(f"{command}: runs code (any options; the user decides)")
                continue
            lines.append(f"{command}: {use.family}")
            if program.leading:
                lines.append(f"  before the use: {' '.join(sorted(program.leading))}")
            if isinstance(use.grammar, FindGrammar):
                lines.append(f"  leading: {' '.join(sorted(use.grammar.leading))}")
                lines.append(f"  operators: {' '.join(sorted(use.grammar.operators))}")
                options = use.grammar.primaries
            else:
                options = use.grammar.options
            lines.extend(f"  {entry}" for entry in _entries(options))
    return "\n".join(lines) + "\n"


def _entries(options: Mapping[str, Option]) -> list[str]:
    by_option: dict[int, tuple[list[str], Option]] = {}
    for spelling, option in options.items():
        by_option.setdefault(id(option), ([], option))[0].append(spelling)
    entries = []
    for spellings, option in by_option.values():
        value = "|".join(sorted(option.choices)) if option.kind is Kind.CHOICE else option.kind
        form = "" if option.kind is Kind.FLAG else ("[=" if option.optional else "=") + value
        entries.append(", ".join(spellings) + form + ("]" if option.optional else ""))
    return sorted(entries, key=lambda entry: entry.lstrip("-").lower())
