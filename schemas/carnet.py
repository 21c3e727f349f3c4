"""`carnet`: the cover, exactly one data row."""

from ecarte_schemas._base import Int, Text, col, schema, column, Check, DateTime

Carnet = schema("carnet", {
    "casino": column(Text, col("text")),
    "table": column(Int, col("int"), Check.ge(1)),
    "date_debut": column(DateTime, col("date")),
})
