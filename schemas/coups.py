"""`coups`: one row per coup (one partie)."""

from ecarte_schemas._base import COUP_TYPES, EVENTS, SIDES, Int, Text, col, schema, column, Check

Coups = schema("coups", {
    "seance": column(Int, col("int")),
    "coup": column(Int, col("int")),
    "type": column(Text, col("enum"), Check.isin(COUP_TYPES)),
    "joueur_a": column(Int, col("int")),
    "joueur_b": column(Int, col("int")),
    "total_a_cents": column(Int, col("amount", "total_a")),
    "total_b_cents": column(Int, col("amount", "total_b")),
    # Chouette-only columns: may be absent from a carnet without chouette.
    "chouette_cents": column(Int, col("amount", "chouette", required=False), nullable=True),
    "en_dehors_cents": column(Int, col("amount", "en_dehors", required=False), nullable=True),
    "evenement": column(Text, col("enum", required=False), Check.isin(EVENTS), nullable=True),
    "gagnant": column(Text, col("enum"), Check.isin(SIDES)),
    "prelevement_cents": column(Int, col("amount", "prelevement")),
    "prelevement_apres_cents": column(Int, col("amount", "prelevement_apres", required=False, default="0")),
})
