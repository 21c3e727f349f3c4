"""What the shared derivations read, for the rules' `needs`: a rule built on
a derivation needs what the derivation reads (the engine checks it before
running the rule)."""

COUP_KEYS = "coups.seance,coup"
# The stakes' sums per coup (`derived.amounts.coup_amounts`): which coup, which side, how much.
STAKES = (COUP_KEYS, "mises.seance,coup,cote,montant")
# The ticket ledger: where each run was detached, its value and numbers.
TICKETS = "tickets.seance,coup,valeur,premier"
# The chouette state: runs (séance order, chouetteur), sautes (winner, what the chouette held).
CHOUETTE_STATE = ("coups.seance,coup,type,joueur_a,gagnant,total_b", "mises.seance,coup,cote,montant")
# The register of ticket books, where the ledger takes the books from when the table is there.
BOOKS = "carnets_tickets.valeur,premier"
