"""What the model is shown of a tool's output: views of bulky text, JSON, diffs and logs
(``views``), pages of text drawn as images (``vision``), secrets redacted (``redaction``), and
shell command outputs reduced (``commands``). Pure: the lanes in ``pipeline`` and the shell
runner in ``integrations.shell`` decide when, and archive the exact original first."""
