"""The anchor of bench row 1: what a data engineer would write instead of the
auditor. A DuckDB script reads the seven CSV files of a carnet (format 1.2's
default dialect: `;`, decimal comma, day-first dates, UTF-8) and runs the
mission's four headline checks in SQL, money in integer cents:

1. coup numbering (EC64-01): in each séance, the coups in row order are 1, 2, 3 …;
2. 10-centime multiples (EC63-01): `montant` and `restitue` of every stake;
3. the 5 % levy of simple coups (EC66-01): `prelevement` = L(mass of the
   winning side, from the stakes), L(x) = x / 20 to the nearest 10 centimes,
   a tie rounded up;
4. ticket face value against the levy (EC661-01): per coup and phase, the
   face value of the tickets detached = `prelevement` (avant) or
   `prelevement_apres` (après).

It prints, for each check, the count of rows that fail it (a gap in the
numbering counts every row after it). Run as a whole process by
`bench_audit.py` (wall time and peak memory, beside the whole audit):

    python bench/duckdb_anchor.py CARNET_FOLDER
"""

from __future__ import annotations

import sys

import duckdb

# Every column as text, as the file holds it; amounts become cents by the
# SQL below (never through a float).
READ = ("read_csv('{path}', delim=';', header=true, all_varchar=true, "
        "auto_detect=false, columns={columns})")
# The carnet's columns, written out here rather than imported from the auditor:
# the anchor is DuckDB's process alone, without the auditor's imports.
TABLES = {
    "carnet": ["casino", "table", "date_debut"],
    "seances": ["seance", "date", "timbre", "jeux", "cagnotte"],
    "fiches": ["seance", "fiche", "date", "tenir_cartes"],
    "coups": ["seance", "coup", "type", "joueur_a", "joueur_b", "total_a", "total_b", "chouette", "en_dehors",
              "evenement", "gagnant", "prelevement", "prelevement_apres"],
    "mises": ["seance", "coup", "rang", "fiche", "cote", "montant", "restitue"],
    "tickets": ["seance", "coup", "phase", "valeur", "premier", "dernier"],
    "carnets_tickets": ["valeur", "premier", "mise_en_service", "paraphe"],
}
INTS = {"seance", "coup", "rang", "fiche", "joueur_a", "joueur_b", "table", "premier", "dernier", "tenir_cartes"}
MONEY = {"cagnotte", "total_a", "total_b", "chouette", "en_dehors", "prelevement", "prelevement_apres",
         "montant", "restitue", "valeur"}
DATES = {"date_debut", "date", "timbre", "mise_en_service"}


def cents(col: str) -> str:
    """`12,50` → 1250 as an exact decimal, then BIGINT."""
    return f"CAST(CAST(replace(nullif(\"{col}\", ''), ',', '.') AS DECIMAL(18, 2)) * 100 AS BIGINT)"


def typed(col: str) -> str:
    if col in MONEY:
        return f"{cents(col)} AS \"{col}\""
    if col in INTS:
        return f"CAST(nullif(\"{col}\", '') AS BIGINT) AS \"{col}\""
    if col in DATES:
        return f"strptime(nullif(\"{col}\", ''), '%d/%m/%Y')::DATE AS \"{col}\""
    return f"lower(\"{col}\") AS \"{col}\""


CHECKS = {
    "EC64-01 coup numbering": """
        SELECT count(*) FROM (
          SELECT coup, row_number() OVER (PARTITION BY seance ORDER BY row_no) AS expected FROM coups)
        WHERE coup IS DISTINCT FROM expected""",
    "EC63-01 10-centime multiples": """
        SELECT count(*) FROM mises WHERE montant % 10 <> 0 OR coalesce(restitue, 0) % 10 <> 0""",
    "EC66-01 levy of simple coups": """
        WITH held AS (
          SELECT seance, coup,
                 sum(CASE WHEN cote = 'a' THEN montant - coalesce(restitue, 0) ELSE 0 END) AS held_a,
                 sum(CASE WHEN cote = 'b' THEN montant - coalesce(restitue, 0) ELSE 0 END) AS held_b
          FROM mises GROUP BY seance, coup)
        SELECT count(*) FROM coups c JOIN held h USING (seance, coup)
        WHERE c.type = 'simple'
          AND c.prelevement <> (CASE WHEN c.gagnant = 'a' THEN h.held_a ELSE h.held_b END + 100) // 200 * 10""",
    "EC661-01 tickets against the levy": """
        WITH face AS (
          SELECT seance, coup, coalesce(nullif(phase, ''), 'avant') AS phase,
                 sum(valeur * (coalesce(dernier, premier) - premier + 1)) AS face
          FROM tickets GROUP BY ALL),
        levy AS (
          SELECT seance, coup, 'avant' AS phase, prelevement AS levy FROM coups
          UNION ALL
          SELECT seance, coup, 'apres', coalesce(prelevement_apres, 0) FROM coups)
        SELECT count(*) FROM levy l FULL JOIN face f USING (seance, coup, phase)
        WHERE coalesce(l.levy, 0) <> coalesce(f.face, 0)""",
}


def main(folder: str) -> None:
    con = duckdb.connect()
    for table, columns in TABLES.items():
        spec = "{" + ", ".join(f"'{c}': 'VARCHAR'" for c in columns) + "}"
        source = READ.format(path=f"{folder}/{table}.csv", columns=spec)
        con.execute(f"CREATE TABLE {table} AS SELECT row_number() OVER () AS row_no, "
                    f"{', '.join(typed(c) for c in columns)} FROM {source}")
    for name, sql in CHECKS.items():
        print(f"{name}: {con.execute(sql).fetchone()[0]}")


if __name__ == "__main__":
    main(sys.argv[1])
