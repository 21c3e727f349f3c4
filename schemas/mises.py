"""`mises`: one row per stake, in order of receipt."""

from ecarte_schemas._base import SIDES, Int, Text, col, schema, column, Check

Mises = schema("mises", {
    "seance": column(Int, col("int")),
    "coup": column(Int, col("int")),
    "rang": column(Int, col("int"), Check.ge(1)),
    "fiche": column(Int, col("int")),
    "cote": column(Text, col("enum"), Check.isin(SIDES)),
    "montant_cents": column(Int, col("amount", "montant")),
    "restitue_cents": column(Int, col("amount", "restitue", required=False, default="0")),
})
