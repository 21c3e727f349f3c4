"""`carnet`: the cover, exactly one data row."""

import pandera.pandas as pa
from pandera.typing import Series

from ecarte_schemas._base import Int, Text, col


class Carnet(pa.DataFrameModel):
    casino: Series[Text] = pa.Field(metadata=col("text"))
    table: Series[Int] = pa.Field(ge=1, metadata=col("int"))
    date_debut: Series[pa.DateTime] = pa.Field(metadata=col("date"))

    class Config:
        name = "carnet"
        strict = False
        coerce = False
