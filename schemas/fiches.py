"""`fiches`: the register of fiches issued (optional table)."""

from ecarte_schemas._base import Int, col, schema, column, Check, DateTime

Fiches = schema("fiches", {
    "seance": column(Int, col("int")),
    "fiche": column(Int, col("int"), Check.ge(1)),
    "date": column(DateTime, col("date")),
    "tenir_cartes": column(Int, col("int", required=False), Check.ge(1), nullable=True),
})
