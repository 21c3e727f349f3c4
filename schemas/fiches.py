"""`fiches`: the register of fiches issued (optional table)."""

import pandera.pandas as pa
from pandera.typing import Series

from ecarte_schemas._base import Int, col


class Fiches(pa.DataFrameModel):
    seance: Series[Int] = pa.Field(metadata=col("int"))
    fiche: Series[Int] = pa.Field(ge=1, metadata=col("int"))
    date: Series[pa.DateTime] = pa.Field(metadata=col("date"))
    tenir_cartes: Series[Int] = pa.Field(ge=1, nullable=True, metadata=col("int", required=False))

    class Config:
        name = "fiches"
        strict = False
        coerce = False
