"""What the shared derivations read, for the rules' `needs`: a rule built on
a derivation needs what the derivation reads (the engine checks it before
running the rule)."""

COUP_KEYS = "coups.seance,coup"
# An optional column the format gives a default (`restitue` 0, `phase` avant,
# `dernier` = premier, `prelevement_apres` 0) is had when absent (its default),
# never when two source columns name it (`Carnet.has`): a rule reading one
# names it here, so that it is not checked on a guess.
# The stakes' sums per coup (`derived.amounts.coup_amounts`): which coup, which side, how much held.
STAKE_ROWS = "mises.seance,coup,cote,montant,restitue"
STAKES = (COUP_KEYS, STAKE_ROWS)
# The ticket ledger: where each run was detached, its value and first number …
TICKETS = "tickets.seance,coup,valeur,premier"
# … and the numbers it holds (the series, counts and face values of the runs).
TICKET_RUNS = (TICKETS, "tickets.dernier")
# … and in which phase each run was detached (the tickets per coup and phase).
TICKET_PHASES = (*TICKET_RUNS, "tickets.phase")
# The chouette state: runs (séance order, chouetteur), sautes (winner, what the chouette held).
CHOUETTE_STATE = ("coups.seance,coup,type,joueur_a,gagnant,total_b", STAKE_ROWS)
# The register of ticket books, where the ledger takes the books from when the table is there.
BOOKS = "carnets_tickets.valeur,premier"
