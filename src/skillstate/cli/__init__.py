"""The ``skillstate`` command: one module per command group (``main.COMMANDS`` lists them,
imported when called), ``doctor/`` for the checks of ``skillstate doctor``. Bare
``skillstate`` starts the gateway."""
