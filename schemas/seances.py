"""`seances`: one row per séance."""

from ecarte_schemas._base import Int, Text, col, schema, column, Check, DateTime

Seances = schema("seances", {
    "seance": column(Int, col("int"), Check.ge(1)),
    "date": column(DateTime, col("date")),
    "timbre": column(DateTime, col("date", required=False), nullable=True),
    "jeux": column(Text, col("text", required=False), nullable=True),
    "cagnotte_cents": column(Int, col("amount", "cagnotte", required=False), nullable=True),
})
