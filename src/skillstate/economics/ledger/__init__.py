"""The ledger: one row per upstream request, what it cost and what a pass-through would have
cost, kept in the store and summed for /cost, /metrics, ``skillstate stats`` and /ui."""

from skillstate.economics.ledger.recorder import Recorder
from skillstate.economics.ledger.report import LABEL, Filters, report
from skillstate.economics.ledger.row import Row
from skillstate.economics.ledger.store import Ledger, LedgerStore

__all__ = ["LABEL", "Filters", "Ledger", "LedgerStore", "Recorder", "Row", "report"]
