"""``python -m skillstate`` is the ``skillstate`` command."""

from skillstate.cli.main import main

if __name__ == "__main__":
    main()
