"""``python -m skillstate.integrations.shell.tables``: print every table of the shell lane's
allowlist (the text tests/fixtures/shell/tables.txt holds, reviewed)."""

from skillstate.integrations.shell.programs import describe

if __name__ == "__main__":
    print(describe(), end="")
