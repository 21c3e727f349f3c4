"""`mises`: one row per stake, in order of receipt."""

import pandera.pandas as pa
from pandera.typing import Series

from ecarte_schemas._base import SIDES, Int, Text, col


class Mises(pa.DataFrameModel):
    seance: Series[Int] = pa.Field(metadata=col("int"))
    coup: Series[Int] = pa.Field(metadata=col("int"))
    rang: Series[Int] = pa.Field(ge=1, metadata=col("int"))
    fiche: Series[Int] = pa.Field(metadata=col("int"))
    cote: Series[Text] = pa.Field(isin=SIDES, metadata=col("enum"))
    montant_cents: Series[Int] = pa.Field(metadata=col("amount", "montant"))
    restitue_cents: Series[Int] = pa.Field(metadata=col("amount", "restitue", required=False, default="0"))

    class Config:
        name = "mises"
        strict = False
        coerce = False
