"""Pandera schemas of the normalised carnet tables, one module per table.

Installed as `ecarte_schemas`. Each schema states what a *table* is: typed
columns, nullability, enumerations and per-cell ranges. The regulation's
cross-row rules live in `auditor/checks/`, not here.

Field metadata tells normalisation how to read the source: which source
column feeds the field, how to parse it, whether the column must exist.
"""

from ecarte_schemas.carnet import Carnet
from ecarte_schemas.carnets_tickets import CarnetsTickets
from ecarte_schemas.coups import Coups
from ecarte_schemas.fiches import Fiches
from ecarte_schemas.mises import Mises
from ecarte_schemas.seances import Seances
from ecarte_schemas.tickets import Tickets

MODELS = {
    "carnet": Carnet,
    "seances": Seances,
    "fiches": Fiches,
    "coups": Coups,
    "mises": Mises,
    "tickets": Tickets,
    "carnets_tickets": CarnetsTickets,
}
REQUIRED_TABLES = ("carnet", "seances", "coups", "mises", "tickets")
OPTIONAL_TABLES = ("fiches", "carnets_tickets")

__all__ = ["MODELS", "REQUIRED_TABLES", "OPTIONAL_TABLES"]
