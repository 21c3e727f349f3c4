"""`seances`: one row per séance."""

import pandera.pandas as pa
from pandera.typing import Series

from ecarte_schemas._base import Int, Text, col


class Seances(pa.DataFrameModel):
    seance: Series[Int] = pa.Field(ge=1, metadata=col("int"))
    date: Series[pa.DateTime] = pa.Field(metadata=col("date"))
    timbre: Series[pa.DateTime] = pa.Field(nullable=True, metadata=col("date", required=False))
    jeux: Series[Text] = pa.Field(nullable=True, metadata=col("text", required=False))
    cagnotte_cents: Series[Int] = pa.Field(nullable=True, metadata=col("amount", "cagnotte", required=False))

    class Config:
        name = "seances"
        strict = False
        coerce = False
