"""`coups`: one row per coup (one partie)."""

import pandera.pandas as pa
from pandera.typing import Series

from ecarte_schemas._base import COUP_TYPES, EVENTS, SIDES, Int, Text, col


class Coups(pa.DataFrameModel):
    seance: Series[Int] = pa.Field(metadata=col("int"))
    coup: Series[Int] = pa.Field(metadata=col("int"))
    type: Series[Text] = pa.Field(isin=COUP_TYPES, metadata=col("enum"))
    joueur_a: Series[Int] = pa.Field(metadata=col("int"))
    joueur_b: Series[Int] = pa.Field(metadata=col("int"))
    total_a_cents: Series[Int] = pa.Field(metadata=col("amount", "total_a"))
    total_b_cents: Series[Int] = pa.Field(metadata=col("amount", "total_b"))
    # Chouette-only columns: may be absent from a carnet without chouette.
    chouette_cents: Series[Int] = pa.Field(nullable=True, metadata=col("amount", "chouette", required=False))
    en_dehors_cents: Series[Int] = pa.Field(nullable=True, metadata=col("amount", "en_dehors", required=False))
    evenement: Series[Text] = pa.Field(isin=EVENTS, nullable=True, metadata=col("enum", required=False))
    gagnant: Series[Text] = pa.Field(isin=SIDES, metadata=col("enum"))
    prelevement_cents: Series[Int] = pa.Field(metadata=col("amount", "prelevement"))
    prelevement_apres_cents: Series[Int] = pa.Field(
        metadata=col("amount", "prelevement_apres", required=False, default="0"))

    class Config:
        name = "coups"
        strict = False
        coerce = False
