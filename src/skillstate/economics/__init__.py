"""Money and tokens: the offline tokenizer, the price catalog (``prices.toml``), the
``Exchange`` record of one request, the pass-through estimate (``counterfactual``) and the
ledger that sums them into what ``/cost``, ``/metrics`` and ``skillstate stats`` report."""
