"""Shell command outputs reduced by family (tests, diffs, listings, matches, text): what
``skillstate shell`` shows the model in place of the exact output it archived."""
