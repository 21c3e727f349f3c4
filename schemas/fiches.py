"""`fiches`: the register of fiches issued (optional table)."""

from ecarte_schemas._base import Int, col, schema, column, pa

Fiches = schema("fiches", {
    "seance": column(Int(), col("int")),
    "fiche": column(Int(), col("int"), pa.Check.ge(1)),
    "date": column(pa.DateTime, col("date")),
    "tenir_cartes": column(Int(), col("int", required=False), pa.Check.ge(1), nullable=True),
})
