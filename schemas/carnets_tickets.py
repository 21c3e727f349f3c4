"""`carnets_tickets`: ticket books put in service at this table (optional)."""

import pandera.pandas as pa
from pandera.typing import Series

from ecarte_schemas._base import YES_NO, Int, Text, col


class CarnetsTickets(pa.DataFrameModel):
    valeur_cents: Series[Int] = pa.Field(metadata=col("amount", "valeur"))
    premier: Series[Int] = pa.Field(metadata=col("int"))
    mise_en_service: Series[pa.DateTime] = pa.Field(metadata=col("date"))
    paraphe: Series[Text] = pa.Field(isin=YES_NO, nullable=True, metadata=col("enum", required=False))

    class Config:
        name = "carnets_tickets"
        strict = False
        coerce = False
