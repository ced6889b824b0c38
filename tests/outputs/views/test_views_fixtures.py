"""Each corpus output yields a view of the right kind that keeps what a reader needs."""

from __future__ import annotations

import pytest
from views_corpus import names, read

from skillstate.outputs.views import View, view_of

KINDS = {
    "ansi_build.log": "log",
    "api_records.json": "json",
    "binaryish.txt": "text",
    "cargo_build.log": "log",
    "changes.diff": "diff",
    "crlf_build.log": "log",
    "grep_search.txt": "text",
    "guide.md": "text",
    "identical_lines.log": "log",
    "jest_failure.txt": "log",
    "nested_config.json": "json",
    "pytest_failure.txt": "log",
    "single_line.txt": "text",
}


def view(name: str) -> View:
    made = view_of(read(name))
    assert made is not None, name
    return made


def test_every_output_has_a_kind_listed() -> None:
    assert sorted(KINDS) == names()


@pytest.mark.parametrize("name", sorted(KINDS))
def test_kind_and_size(name: str) -> None:
    made = view(name)
    text = read(name)
    assert made.kind == KINDS[name]
    assert made.original_chars == len(text)
    if name != "binaryish.txt":  # splitlines also splits at form feeds and the like
        assert made.original_lines == len(text.splitlines())
    assert len(made.body) <= 6000


def test_pytest_failure_keeps_the_test_the_assertion_and_the_summary() -> None:
    body = view("pytest_failure.txt").body
    assert "test_merge_drops_null_keys[nested]" in body
    assert "E       AssertionError: assert {'a': {'b': None}} == {'a': {}}" in body
    assert ">       assert merge(left, patch) == {'a': {}}" in body
    assert "FAILED tests/state/test_merge_37.py::test_merge_drops_null_keys[nested]" in body
    assert "1 failed, 611 passed, 150 warnings in 12.41s" in body
    # the passing rows are folded, not listed
    assert "(… repeated 150 times, digits varying)" in body
    assert body.count("tests/state/test_merge_") < 10


def test_jest_failure_keeps_the_test_the_expectation_and_the_summary() -> None:
    body = view("jest_failure.txt").body
    assert "● sum › adds 1 + 2 to equal 3" in body
    assert "Expected: 3" in body and "Received: 4" in body
    assert "at Object.<anonymous> (src/lib/sum.test.ts:4:21)" in body
    assert "Tests:       1 failed, 2311 passed, 2312 total" in body


def test_build_log_keeps_the_error_and_its_location() -> None:
    made = view("cargo_build.log")
    assert "error[E0425]: cannot find value `sesion_id` in this scope" in made.body
    assert "   --> src/engine/resolve.rs:88:17" in made.body
    assert "error: could not compile `engine` (lib) due to 1 previous error" in made.body
    # the warnings that did not fit are cut with the count marked, their places in the sidecar
    assert "lines …" in made.body
    assert "src/engine/step_89.rs" in made.body + " ".join(made.identifiers)


def test_ansi_codes_are_stripped_in_the_view() -> None:
    made = view("ansi_build.log")
    assert "\x1b" not in made.body
    assert "error[E0425]: cannot find value `sesion_id` in this scope" in made.body
    assert made.body == view("cargo_build.log").body


def test_crlf_reads_as_lf() -> None:
    made = view("crlf_build.log")
    assert "\r" not in made.body
    assert made.body == view("pytest_failure.txt").body


def test_json_records_keep_their_errors_and_shape() -> None:
    made = view("api_records.json")
    assert "anomalies (3):" in made.body
    for n in (17, 233, 498):
        assert f"$.data[{n}]:" in made.body
        assert f'"code":"ERR_UPSTREAM_{n}"' in made.body
    assert "data: [500 items]" in made.body
    assert "[499]:" in made.body


def test_nested_config_keeps_the_failure_and_the_top_keys() -> None:
    made = view("nested_config.json")
    assert '$.deploy: {"status":"failed","code":2,"exception":"PermissionError: /srv"}' in made.body
    assert 'version: "3.14.1"' in made.body
    assert "section_0: {4 keys}" in made.body


def test_diff_names_every_file_with_counts() -> None:
    made = view("changes.diff")
    for f, mod in enumerate(["api", "auth", "billing", "core", "db", "events"]):
        assert f"  src/skillstate/{mod}/module_{f}.py (+20 -20)" in made.body
    assert "6 files changed, +120 -120:" in made.body
    assert "@@ -1,40 +1,42 @@ def function_0():" in made.body
    assert "more changed lines …" in made.body
    assert "commit 9f3c2a1b7e4d5f60718293a4b5c6d7e8f9012345" in made.body


def test_markdown_keeps_its_headings() -> None:
    made = view("guide.md")
    assert "# skillstate operations guide" in made.body
    for s in range(30):
        assert f"## Section {s}: topic {s}" in made.body


def test_search_output_shows_each_file_once_before_repeating_any() -> None:
    made = view("grep_search.txt")
    for mod in ["api", "core", "web"]:
        for k in range(7):
            assert f"src/skillstate/{mod}/handler_{k}.py:" in made.body
