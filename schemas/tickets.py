"""`tickets`: tickets detached, one row per run of consecutive numbers."""

import pandera.pandas as pa
from pandera.typing import Series

from ecarte_schemas._base import PHASES, Int, Text, col


class Tickets(pa.DataFrameModel):
    seance: Series[Int] = pa.Field(metadata=col("int"))
    coup: Series[Int] = pa.Field(metadata=col("int"))
    phase: Series[Text] = pa.Field(isin=PHASES, metadata=col("enum", required=False, default="avant"))
    valeur_cents: Series[Int] = pa.Field(metadata=col("amount", "valeur"))
    premier: Series[Int] = pa.Field(metadata=col("int"))
    # An empty `dernier` is a run of one ticket.
    dernier: Series[Int] = pa.Field(metadata=col("int", required=False, default_from="premier"))

    class Config:
        name = "tickets"
        strict = False
        coerce = False
