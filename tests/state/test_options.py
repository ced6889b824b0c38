"""Collapse options: defaults, and every bad mapping reported by the option it names."""

from __future__ import annotations

from dataclasses import fields

import pytest

from skillstate.state.options import CollapseOptions, OptionsError, parse_options


def test_an_empty_mapping_gives_the_documented_defaults() -> None:
    options = parse_options({})
    assert options == CollapseOptions()
    assert options.enabled is True
    assert options.protect_first_user_message is True
    assert options.allow_subagent_sessions is False
    assert options.keep_recent_turns >= 1
    assert options.min_turns > options.keep_recent_turns


def test_given_options_override_defaults_and_the_rest_stay() -> None:
    options = parse_options({"keep_recent_turns": 7, "nudge_when_stale": False})
    assert options.keep_recent_turns == 7
    assert options.nudge_when_stale is False
    assert options.min_turns == CollapseOptions().min_turns


def test_the_options_are_the_ones_the_issue_names_the_window_cap_and_the_bench_switch() -> None:
    assert [f.name for f in fields(CollapseOptions)] == [
        "enabled",
        "min_turns",
        "keep_recent_turns",
        "protect_first_user_message",
        "allow_subagent_sessions",
        "seed_from_tools",
        "track_tools",
        "nudge_when_stale",
        "stale_after",
        "max_window_tokens",
        "every_request",
        "passthrough_until_boundary",
        "handover",
    ]


def test_options_are_frozen() -> None:
    options = CollapseOptions()
    with pytest.raises(AttributeError):
        options.min_turns = 3  # type: ignore[misc]


def test_an_unknown_option_is_named_with_the_closest_known_one() -> None:
    with pytest.raises(OptionsError) as caught:
        parse_options({"keep_recnt_turns": 3})
    assert caught.value.problems == (
        "collapse option 'keep_recnt_turns' is unknown; did you mean 'keep_recent_turns'?",
    )


def test_an_unknown_option_far_from_any_is_named_without_a_guess() -> None:
    with pytest.raises(OptionsError, match=r"'zzz' is unknown$"):
        parse_options({"zzz": 1})


@pytest.mark.parametrize(
    ("name", "value", "words"),
    [
        ("enabled", "yes", "must be true or false, not 'yes' (str)"),
        ("enabled", 1, "must be true or false, not 1 (int)"),
        ("min_turns", True, "must be a whole number, not True (bool)"),
        ("min_turns", 3.0, "must be a whole number, not 3.0 (float)"),
        ("stale_after", "6", "must be a whole number, not '6' (str)"),
        ("keep_recent_turns", 0, "must be at least 1, not 0"),
        ("stale_after", 0, "must be at least 1, not 0"),
        ("max_window_tokens", 10, "must be at least 1000, not 10"),
        ("min_turns", -1, "must be at least 0, not -1"),
    ],
)
def test_a_bad_value_is_named_by_its_option(name: str, value: object, words: str) -> None:
    with pytest.raises(OptionsError) as caught:
        parse_options({name: value})
    assert caught.value.problems == (f"collapse option {name!r} {words}",)


def test_every_problem_is_reported_at_once() -> None:
    with pytest.raises(OptionsError) as caught:
        parse_options({"track_tool": True, "min_turns": "x", "stale_after": 2})
    assert len(caught.value.problems) == 2
    assert str(caught.value).splitlines() == list(caught.value.problems)


def test_every_option_is_accepted_by_name() -> None:
    defaults = CollapseOptions()
    names = [f.name for f in fields(CollapseOptions)]
    flipped = {
        name: (not value if isinstance(value, bool) else value + 1)
        for name in names
        for value in [getattr(defaults, name)]
    }
    options = parse_options(flipped)
    assert all(getattr(options, name) == flipped[name] for name in names)
