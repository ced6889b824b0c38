"""``skillstate doctor``: is everything in place? The gateway, the upstreams, the data
directory, the agent CLIs, the integrations, the shell hook and the price catalog's age, each a
``Check`` that names the command fixing it."""

from skillstate.cli.doctor.check import Check, healthy, report_json
from skillstate.cli.doctor.examination import Surroundings, examine
from skillstate.cli.doctor.hosts import IntegrationProbe, ShellHookProbe

__all__ = [
    "Check",
    "IntegrationProbe",
    "ShellHookProbe",
    "Surroundings",
    "examine",
    "healthy",
    "report_json",
]
