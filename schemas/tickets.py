"""`tickets`: tickets detached, one row per run of consecutive numbers."""

from ecarte_schemas._base import PHASES, Int, Text, col, schema, column, Check

Tickets = schema("tickets", {
    "seance": column(Int, col("int")),
    "coup": column(Int, col("int")),
    "phase": column(Text, col("enum", required=False, default="avant"), Check.isin(PHASES)),
    "valeur_cents": column(Int, col("amount", "valeur")),
    "premier": column(Int, col("int")),
    # An empty `dernier` is a run of one ticket.
    "dernier": column(Int, col("int", required=False, default_from="premier")),
})
