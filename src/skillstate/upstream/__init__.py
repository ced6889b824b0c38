"""Reaching providers: the pooled HTTP client, routing a model to an upstream and its
fallbacks, retries, rate limits and the circuit breaker. ``server/forward.py`` is the only
caller."""
