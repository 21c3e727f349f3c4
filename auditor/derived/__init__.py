"""Facts derived from the normalised carnet, computed once per carnet and read
by the checks and by the report alike.

- `cache`: `per_carnet`, the one cache (a memo held by the carnet itself);
- `amounts`: the stakes' sums per coup (held, sur_chouette, masses, levy basis)
  and the coups whose amounts can be verified;
- `chouette`: the coups in carnet order, the chouette runs, adjudication
  segments, sautes and remises;
- `levy`: the expected levies of simple and chouette coups, and the carnet's totals;
- `fiches`: the fiche register and who holds the cards at each coup.

No module here imports `auditor.checks`, `auditor.report` or `auditor.read`.
"""
