"""`carnets_tickets`: ticket books put in service at this table (optional)."""

from ecarte_schemas._base import YES_NO, Int, Text, col, schema, column, Check, DateTime

CarnetsTickets = schema("carnets_tickets", {
    "valeur_cents": column(Int, col("amount", "valeur")),
    "premier": column(Int, col("int")),
    "mise_en_service": column(DateTime, col("date")),
    "paraphe": column(Text, col("enum", required=False), Check.isin(YES_NO), nullable=True),
})
