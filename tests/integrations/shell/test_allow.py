"""The shell lane's allowlist: tables of commands allowed (read-only, or running code: the
user decides) and refused, and fuzzed hostile commands (every metacharacter, quoting trick,
destructive verb, newline and environment assignment put into otherwise allowed commands) that
are never rewritten. The attacker's corpus is tests/shell/test_exploits.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from skillstate.integrations.shell import decide, decide_argv, rewrite

ALLOWED = [
    ("git status", "git-status"),
    ("git status --short", "git-status"),
    ("git log --oneline -20", "git-log"),
    ("git diff HEAD~3 -- src", "diff"),
    ("git diff --no-ext-diff", "diff"),
    ("git show HEAD", "diff"),
    ("ls -la", "listing"),
    ("ls -R src", "listing"),
    ("find . -name '*.py'", "listing"),
    ('find src -type f -name "*.txt"', "listing"),
    ("tree -L 2", "tree"),
    ("wc -l README.md", "plain"),
    ("grep -rn 'def (main|run)' src", "grep"),
    ('grep -rn "a;b|c" .', "grep"),
    ("rg -n TODO", "grep"),
    ("cat README.md", "text"),
    ("head -n 40 src/a.py", "text"),
    ("tail -n 20 log.txt", "text"),
    ("cat src/*.py", "text"),
    ("git --no-pager log -p -3", "git-log"),
    ("grep -rn -e foo -e bar -- src", "grep"),
    ("tail -n +5 log.txt", "text"),
]

RUNS_CODE = [
    ("pytest -q tests", "tests"),
    ("python -m pytest -x tests/shell", "tests"),
    ("npm test", "tests"),
    ("npm run test", "tests"),
    ("cargo test", "tests"),
    ("go test ./...", "tests"),
    ("ruff check src", "grep"),
    ("ruff check --fix", "grep"),
    ("mypy src", "grep"),
    ("eslint --fix .", "grep"),
    ("cargo clippy --fix", "grep"),
]

REFUSED = [
    "git status; rm -rf /",
    "git status && git push",
    "git log | head",
    "cat a > b",
    "cat < a",
    "cat <<EOF",
    "ls $(pwd)",
    "ls `pwd`",
    "ls ${IFS}",
    "echo hi",
    "rm -rf build",
    "sudo ls",
    "FOO=1 pytest",
    "/bin/ls",
    "./pytest",
    "git push",
    "git reset --hard",
    "git clean -fdx",
    "git checkout .",
    "git -c core.pager=sh log",
    "git -C .. status",
    "git diff --ext-diff",
    "git diff --output=x",
    "git diff --out=x",
    "git log --output x",
    "find . -delete",
    "find . -exec rm {} +",
    "find . -execdir sh -c x ;",
    "find . -fprint out",
    "tree -o out.txt",
    "tail -f log",
    "tail -nF 5 log",
    "rg --pre sh x",
    "ruff format",
    "pytest -o cache_dir=/abs",
    "pytest --basetemp=../x",
    "cat /etc/passwd",
    "cat ../secret",
    "cat ~/.ssh/id_rsa",
    "grep -r x /",
    "grep --file=/etc/shadow x",
    "grep -f/etc/shadow x",
    "git diff -O../order",
    "ls ../*",
    "cat /etc/*",
    "ls 'a\nb'",
    "ls a\\ b",
    'ls "it\'s"$x',
    "ls 'unbalanced",
    "ls # comment",
    "ls !x",
    "python -c 'import os'",
    "npm install",
    "cargo run",
    "",
]


@pytest.mark.parametrize(("command", "family"), ALLOWED)
def test_allowed_commands_get_their_family(tmp_path: Path, command: str, family: str) -> None:
    decision = decide(command, tmp_path)
    assert decision.allowed, decision.reason
    assert decision.family == family
    assert not decision.runs_code


@pytest.mark.parametrize(("command", "family"), RUNS_CODE)
def test_commands_that_run_code_are_marked(tmp_path: Path, command: str, family: str) -> None:
    decision = decide(command, tmp_path)
    assert decision.allowed, decision.reason
    assert (decision.family, decision.runs_code) == (family, True)


@pytest.mark.parametrize("command", REFUSED)
def test_refused_commands_are_never_rewritten(tmp_path: Path, command: str) -> None:
    decision = decide(command, tmp_path)
    assert not decision.allowed
    assert decision.reason
    assert rewrite(command, tmp_path) is None


def test_a_rewrite_quotes_words_and_leaves_globs_to_the_host_shell(tmp_path: Path) -> None:
    shell = f"skillstate shell --project {tmp_path} --"
    assert rewrite("grep -rn 'a b' src", tmp_path) == f"{shell} grep -rn 'a b' src"
    assert rewrite("cat src/*.py", tmp_path) == f"{shell} cat src/*.py"
    assert rewrite("find . -name '*.py'", tmp_path) == f"{shell} find . -name '*.py'"


def test_a_link_out_of_the_project_is_refused(tmp_path: Path) -> None:
    (tmp_path / "out").symlink_to("/etc")
    assert not decide("cat out/hostname", tmp_path).allowed
    assert not decide_argv(["cat", "out"], tmp_path).allowed


def test_words_given_to_skillstate_shell_are_checked_as_paths(tmp_path: Path) -> None:
    assert decide_argv(["cat", "a;b"], tmp_path).allowed  # one word: no shell reads it
    assert not decide_argv(["cat", "/etc/passwd"], tmp_path).allowed
    assert not decide_argv(["cat", "a\nb"], tmp_path).allowed
    assert not decide_argv(["rm", "x"], tmp_path).allowed


# --- fuzz -------------------------------------------------------------------------------------

# "~" alone only where the shell expands it: HEAD~3 is a literal word, and allowed.
METACHARACTERS = [*";&|<>(){}$`\\\n\r#!", " ~"]
TRICKS = [
    "$'\\x3b'",
    "$'rm'",
    '"$(rm -rf .)"',
    "'$(x)'\"$(y)\"",
    "`rm -rf .`",
    '"`id`"',
    "${IFS}",
    "$IFS",
    "\\;",
    "\\\n",
    "'unbalanced",
    '"unbalanced',
    "a\\ b",
    "&&",
    "||",
    ">",
    ">>",
    "2>&1",
    "<(ls)",
    ">(cat)",
    "<<EOF",
    "<<<x",
    "|&",
    "$((1+1))",
    "{a,b}",
    " ~root",
    " ~/x",
    " --file=~/x",
    " a:~/x",
    "!!",
    # Two operands, so that one is a path even where the first is a pattern (grep, rg).
    " . /etc/* ",
    " . ../* ",
    " . / ",
    " . ../../x ",
    " . /etc/passwd ",
]
VERBS = [
    "rm -rf .",
    "mv a b",
    "dd if=/dev/zero of=a",
    "chmod 777 a",
    "git push",
    "git reset --hard",
    "git clean -fdx",
    "git checkout -- .",
    "sed -i s/a/b/ f",
    "find . -delete",
    "find . -exec rm {} ;",
    "find . -execdir rm x",
    "git diff --ext-diff",
    "git diff --output=f",
    "tee out",
    "truncate -s 0 f",
    "> f",
    "sudo ls",
    "curl x",
    "sh -c ls",
]
ASSIGNMENTS = ["FOO=1", "PATH=.", "LD_PRELOAD=x.so", "GIT_EXTERNAL_DIFF=sh"]
PROJECT = Path("/work/nonexistent-project")
BASES = [command for command, _ in ALLOWED + RUNS_CODE if "'" not in command and '"' not in command]


def _splice(base: str, inserted: str, at: int) -> str:
    cut = at % (len(base) + 1)
    return base[:cut] + inserted + base[cut:]


def hostile() -> st.SearchStrategy[str]:
    """An allowed command (no quotes in it) with something hostile put in at any place, chained
    to a destructive verb, a destructive verb alone, or after an environment assignment."""
    inserted = st.sampled_from(METACHARACTERS + TRICKS)
    spliced = st.builds(_splice, st.sampled_from(BASES), inserted, st.integers(0, 200))
    joints = st.sampled_from([";", "&&", "||", "|", "&", "\n", "\r", "`", "$("])
    chained = st.builds(
        lambda base, joint, verb: f"{base} {joint} {verb}",
        st.sampled_from(BASES),
        joints,
        st.sampled_from(VERBS),
    )
    verbs = st.builds(_splice, st.sampled_from(VERBS), st.sampled_from(["", " "]), st.just(0))
    assigned = st.builds(
        lambda a, b: f"{a} {b}", st.sampled_from(ASSIGNMENTS), st.sampled_from(BASES)
    )
    return st.one_of(spliced, chained, verbs, assigned)


@settings(max_examples=4000, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(command=hostile())
def test_fuzzed_hostile_commands_are_never_rewritten(command: str) -> None:
    assert rewrite(command, PROJECT) is None, command


@settings(max_examples=1500, deadline=None)
@given(
    active=st.sampled_from(list("$`\\!")),
    before=st.text("abc (){};|&<>*?'", max_size=6),
    after=st.text("abc (){};|&<>*?'", max_size=6),
)
def test_active_characters_inside_double_quotes_are_never_rewritten(
    active: str, before: str, after: str
) -> None:
    assert rewrite(f'grep -rn "{before}{active}{after}" src', PROJECT) is None


@settings(max_examples=3000, deadline=None)
@given(command=st.text(max_size=60).map(lambda text: "grep " + text))
def test_an_allowed_rewrite_runs_exactly_the_words_judged(command: str) -> None:
    """Whatever is allowed renders to a line that a POSIX shell splits back into the same
    words (globs aside), holding no line end."""
    import shlex

    decision = decide(command, PROJECT)
    if not decision.allowed:
        return
    assert "\n" not in decision.rendered and "\r" not in decision.rendered
    if not any(c in command for c in "*?["):
        assert tuple(shlex.split(decision.rendered)) == decision.argv


def test_a_partly_quoted_glob_is_refused(tmp_path: Path) -> None:
    assert not decide("cat '*'*.py", tmp_path).allowed


def test_the_public_surface() -> None:
    import skillstate.integrations.shell

    assert skillstate.integrations.shell.__all__ == [
        "Decision",
        "Host",
        "Place",
        "Reply",
        "answer",
        "decide",
        "decide_argv",
        "reduce",
        "rewrite",
    ]
