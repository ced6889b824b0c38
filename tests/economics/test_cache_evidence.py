"""The evidence the pass-through estimate follows: per upstream and model, the wire's cache
rule until the provider's own usage says otherwise (issue 26)."""

from __future__ import annotations

from skillstate.conversation import Usage
from skillstate.economics.cache_evidence import BASES, CacheEvidence
from skillstate.economics.counterfactual import Cached

RULE = Cached(input=10_000, cached=8_192)
"""What the automatic rule estimates for a client's request."""
WRITE = Cached(input=10_000, cached=0, written=4_000)


def test_before_any_evidence_the_wires_documented_rule_is_followed() -> None:
    evidence = CacheEvidence()
    assert evidence.follow("up", "m", RULE, explicit=False) == (RULE, "automatic")
    assert evidence.follow("up", "m", WRITE, explicit=True) == (WRITE, "explicit")


def test_a_request_without_a_chance_of_a_hit_is_no_evidence() -> None:
    evidence = CacheEvidence()
    evidence.observe("up", "m", Usage(input=900), Cached(input=900))
    evidence.observe("up", "m", Usage(input=900))
    assert evidence.follow("up", "m", RULE, explicit=False)[1] == "automatic"


def test_a_provider_that_never_reports_a_cache_where_one_would_hit_is_estimated_without() -> None:
    evidence = CacheEvidence()
    evidence.observe("local", "llama", Usage(input=10_000), Cached(10_000, cached=9_984))
    assert evidence.follow("local", "llama", RULE, explicit=False) == (
        Cached(input=10_000),
        "no-cache",
    )
    evidence.observe("claude-proxy", "m", Usage(input=5_000), Cached(5_000, written=4_096))
    assert evidence.follow("claude-proxy", "m", WRITE, explicit=True) == (
        Cached(input=10_000),
        "no-cache",
    )


def test_a_provider_that_serves_what_the_rule_predicts_is_estimated_by_the_rule() -> None:
    evidence = CacheEvidence()
    evidence.observe("up", "m", Usage(input=10_000, cached_input=9_984), Cached(10_000, 9_856))
    assert evidence.follow("up", "m", RULE, explicit=False) == (RULE, "automatic")
    evidence.observe("a", "m", Usage(input=5_000, cache_write=4_096), Cached(5_000, written=4_096))
    assert evidence.follow("a", "m", WRITE, explicit=True) == (WRITE, "explicit")


def test_an_automatic_cache_that_serves_less_is_scaled_by_the_observed_share() -> None:
    evidence = CacheEvidence()
    evidence.observe("up", "m", Usage(input=10_000, cached_input=4_096), Cached(10_000, 8_192))
    evidence.observe("up", "m", Usage(input=10_000), Cached(10_000, 8_192))
    assert evidence.evidence("up", "m").share == 0.25
    assert evidence.follow("up", "m", RULE, explicit=False) == (
        Cached(input=10_000, cached=2_048),
        "observed",
    )


def test_evidence_is_kept_per_upstream_and_model() -> None:
    evidence = CacheEvidence()
    evidence.observe("local", "llama", Usage(input=10_000), Cached(10_000, cached=9_984))
    assert evidence.follow("local", "qwen", RULE, explicit=False)[1] == "automatic"
    assert evidence.follow("openai", "llama", RULE, explicit=False)[1] == "automatic"


def test_a_cache_seen_on_any_round_is_a_cache() -> None:
    """A provider that reported cache tokens on a request the rule predicted none for (a
    hidden round, an older entry) does cache: it is not estimated without one."""
    evidence = CacheEvidence()
    evidence.observe("up", "m", Usage(input=3_000, cached_input=2_048))
    evidence.observe("up", "m", Usage(input=10_000), Cached(10_000, cached=8_192))
    cached, basis = evidence.follow("up", "m", RULE, explicit=False)
    assert basis == "observed" and cached == Cached(10_000, 0)


def test_the_pairs_kept_are_bounded_the_oldest_forgotten() -> None:
    evidence = CacheEvidence(providers=2)
    for model in ("a", "b", "c"):
        evidence.observe("up", model, Usage(input=10_000), Cached(10_000, cached=8_192))
    assert evidence.follow("up", "a", RULE, explicit=False)[1] == "automatic"
    assert evidence.follow("up", "c", RULE, explicit=False)[1] == "no-cache"


def test_the_bases_are_named_once() -> None:
    assert BASES == ("recorded", "automatic", "explicit", "observed", "no-cache")
