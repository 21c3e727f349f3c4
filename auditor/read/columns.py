"""Column names as people write them: which source column is which carnet column.

A header cell is *folded* (case, accents, punctuation, a unit suffix such as
`(€)` or `en euros`, the little words `de`, `du`, `la`…) and then matched, in
this order, against the user's mapping file (`--columns FILE.toml`), the
carnet column names themselves and a built-in list of French variants per
table. Two source columns that land on one carnet column are ambiguous: the
column is not read (never a guess) and the reader reports both names.
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

from auditor.errors import Message

# Units an amount column may name: euros only. `(cts)` or `(centimes)` is not
# folded away: such a column is not in euros and must not be read as if it were.
_UNIT = re.compile(r"\s*(\((?:en\s+)?(?:€|eur|euros?)\)|\[(?:€|eur|euros?)\]|\ben\s+(?:€|euros?)\b|€|\beuros?\b)\s*$")
_NUMERO = re.compile(r"\bn\s*[°º]\s*|\bno\b\.?|\bnum\b\.?|\bnr\b\.?")
_NOT_WORD = re.compile(r"[^a-z0-9]+")
_LITTLE = frozenset({"de", "du", "des", "d", "la", "le", "les", "l"})


def fold(text: object) -> str:
    """`Montant (€)` → `montant`, `N° du coup` → `numero_coup`, `Côté` → `cote`."""
    return _fold(str(text))


# Header texts repeat across every carnet of a batch: each is folded once per
# process (keyed by the text, so 1 and 1.0 stay apart).
@lru_cache(maxsize=8192)
def _fold(text: str) -> str:
    s = text.replace("\u00a0", " ").replace("_", " ").strip()
    s = unicodedata.normalize("NFKD", s.lower().replace("°", "° ").replace("º", "º "))
    s = _UNIT.sub("", s)
    s = _NUMERO.sub(" numero ", s)
    s = "".join(ch for ch in s if not unicodedata.combining(ch))
    words = [w for w in _NOT_WORD.split(s) if w and w not in _LITTLE]
    return "_".join(words)


def fold_source(text: object) -> str:
    """A mapping's source name as written, folded for case, accents and
    spaces only (format v1.2): `Du`, `Au` and `N°` stay what they are, where
    `fold` would drop a little word or a sign."""
    return _fold_source(str(text))


@lru_cache(maxsize=8192)
def _fold_source(text: str) -> str:
    s = unicodedata.normalize("NFKD", text.replace("\u00a0", " ").replace("\u202f", " ").lower())
    s = "".join(ch for ch in s if not unicodedata.combining(ch))
    return " ".join(s.split())


# Built-in French variants, per table: what casino systems and clerks write.
# Written as people write them; folded once when first used.
_COMMON = {
    "seance": ["Séance", "N° séance", "N° de séance", "Numéro de séance", "Séance n°", "Num séance"],
    "coup": ["Coup", "N° coup", "N° du coup", "Numéro du coup", "Numéro de coup", "Coup n°"],
}
ALIASES: dict[str, dict[str, list[str]]] = {
    "carnet": {
        "casino": ["Casino", "Établissement", "Nom du casino"],
        "table": ["Table", "N° table", "N° de table", "Numéro de table", "Table n°", "Table de jeu"],
        "date_debut": ["Date de début", "Date début", "Début", "Commencé le", "Date d'ouverture",
                       "Date de mise en service"],
    },
    "seances": {
        "seance": _COMMON["seance"],
        "date": ["Date", "Date de la séance", "Date séance", "Jour"],
        "timbre": ["Timbre", "Timbre dateur", "Date du timbre", "Timbre à date", "Cachet"],
        "jeux": ["Jeux", "Jeux de cartes", "Jeux utilisés", "Cartes"],
        "cagnotte": ["Cagnotte", "Produit de la cagnotte", "Montant de la cagnotte"],
    },
    "fiches": {
        "seance": _COMMON["seance"],
        "fiche": ["Fiche", "N° fiche", "N° de fiche", "Numéro de fiche", "Fiche n°", "N° d'ordre",
                  "Numéro d'ordre"],
        "date": ["Date", "Date de la fiche", "Date fiche"],
        "tenir_cartes": ["Tenir les cartes", "Rang pour tenir les cartes", "Inscription", "Rang d'inscription"],
    },
    "coups": {
        "seance": _COMMON["seance"],
        "coup": _COMMON["coup"],
        "type": ["Type", "Type de coup", "Type du coup", "Genre"],
        "joueur_a": ["Joueur A", "Fiche joueur A", "Fiche A", "Joueur côté A", "Tenant A", "Chouetteur"],
        "joueur_b": ["Joueur B", "Fiche joueur B", "Fiche B", "Joueur côté B", "Tenant B"],
        "total_a": ["Total A", "Total côté A", "Masse A", "Total tenu A", "Total tenu côté A"],
        "total_b": ["Total B", "Total côté B", "Masse B", "Total tenu B", "Total tenu côté B"],
        "chouette": ["Chouette", "Montant de la chouette", "Montant chouette"],
        "en_dehors": ["En dehors", "Hors chouette", "Total en dehors", "En dehors de la chouette"],
        "evenement": ["Événement", "Évènement", "Evenement"],
        "gagnant": ["Gagnant", "Côté gagnant", "Vainqueur", "Gagné par"],
        "prelevement": ["Prélèvement", "Prélèvement avant", "Prélèvement avant la donne", "Prélevé",
                        "Montant prélevé"],
        "prelevement_apres": ["Prélèvement après", "Prélèvement après le résultat", "Prélèvement après résultat"],
    },
    "mises": {
        "seance": _COMMON["seance"],
        "coup": _COMMON["coup"],
        "rang": ["Rang", "Ordre", "N° d'ordre", "Ordre de réception", "Rang de réception", "Rang de la mise"],
        "fiche": ["Fiche", "N° fiche", "N° de fiche", "Numéro de fiche", "Fiche n°", "Fiche du joueur",
                  "Fiche parieur"],
        "cote": ["Côté", "Cote", "Côté misé", "Côté joué", "Sens"],
        "montant": ["Montant", "Mise", "Montant de la mise", "Montant misé", "Somme", "Somme remise"],
        "restitue": ["Restitué", "Restitution", "Montant restitué", "Rendu", "Part restituée"],
    },
    "tickets": {
        "seance": _COMMON["seance"],
        "coup": _COMMON["coup"],
        "phase": ["Phase", "Moment", "Avant/après"],
        "valeur": ["Valeur", "Valeur faciale", "Valeur du ticket", "Valeur des tickets"],
        "premier": ["Premier", "Premier ticket", "N° premier ticket", "Premier numéro", "Du n°"],
        "dernier": ["Dernier", "Dernier ticket", "N° dernier ticket", "Dernier numéro", "Au n°"],
    },
    "carnets_tickets": {
        "valeur": ["Valeur", "Valeur faciale", "Valeur du carnet"],
        "premier": ["Premier", "Premier ticket", "N° premier ticket", "Premier numéro"],
        "mise_en_service": ["Mise en service", "Date de mise en service", "Mis en service le"],
        "paraphe": ["Paraphe", "Paraphé", "Paraphe et cachet", "Visa du comptable"],
    },
}


@dataclass(frozen=True)
class TableColumns:
    """A table's carnet columns, the required ones, and the folded names that reach them."""

    columns: tuple[str, ...]
    required: tuple[str, ...]
    names: dict  # folded name → carnet column (exact names and built-in variants)


@lru_cache(maxsize=None)
def table_columns(table: str) -> TableColumns | None:
    """The columns of `table` as its schema names them (None for an unknown table)."""
    import ecarte_schemas

    schema = ecarte_schemas.MODELS.get(table)
    if schema is None:
        return None
    columns, required = [], []
    for name, column in schema.columns.items():
        meta = column.metadata or {}
        source = meta.get("source") or name
        columns.append(source)
        if meta.get("required"):
            required.append(source)
    names: dict[str, str] = {}
    for column in columns:
        for variant in ALIASES.get(table, {}).get(column, []):
            names.setdefault(fold(variant), column)
    for column in columns:     # a carnet column's own name always wins over a variant
        names[fold(column)] = column
    return TableColumns(tuple(columns), tuple(required), names)


# -- the mapping file ---------------------------------------------------------------

class ColumnsFileError(ValueError):
    """The mapping file cannot be used (a usage error, not a finding)."""


@dataclass(frozen=True)
class ColumnMap:
    """A `--columns FILE.toml` mapping: for each table, source column → carnet column.

    Picklable (batch workers get it) and hashable; `digest` is the file's
    SHA-256, part of the cache key and echoed in findings.json."""

    path: str
    digest: str
    tables: tuple[tuple[str, tuple[tuple[str, str], ...]], ...]   # table → ((source, column), …)

    def for_table(self, table: str) -> dict[str, str]:
        """source name (folded for case, accents and spaces) → carnet column."""
        for name, pairs in self.tables:
            if name == table:
                return {fold_source(src): col for src, col in pairs}
        return {}

    def as_json(self) -> dict:
        """What findings.json records of the mapping file."""
        return {"file": Path(self.path).name, "sha256": self.digest,
                "tables": {t: dict(pairs) for t, pairs in self.tables}}


def load_columns_file(path: Path) -> ColumnMap:
    """Read a `--columns` mapping file; a file that cannot be read or understood is a ColumnsFileError."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ColumnsFileError(Message("columns.cannot_read", path=path, reason=exc.strerror or exc)) from None
    import tomllib   # a --columns file only: its import compiles a dozen patterns

    try:
        doc = tomllib.loads(data.decode("utf-8-sig"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise ColumnsFileError(Message("columns.not_toml", path=path, reason=exc)) from None
    tables = []
    for table in sorted(doc):
        spec = table_columns(table)
        if spec is None:
            raise ColumnsFileError(Message("columns.unknown_table", path=path, table=table,
                                           tables=", ".join(sorted(_all_tables()))))
        entries = doc[table]
        if not isinstance(entries, dict):
            raise ColumnsFileError(Message("columns.not_a_list", path=path, table=table))
        pairs = []
        seen: dict[str, str] = {}
        for source, column in entries.items():
            if not isinstance(column, str) or column not in spec.columns:
                raise ColumnsFileError(Message("columns.not_a_column", path=path, table=table, source=source,
                                               column=column, columns=", ".join(spec.columns)))
            key = fold_source(source)
            if not key:
                raise ColumnsFileError(Message("columns.empty_source", path=path, table=table, source=source))
            if key in seen and seen[key] != column:
                raise ColumnsFileError(Message("columns.mapped_twice", path=path, table=table, source=source))
            seen[key] = column
            pairs.append((source, column))
        tables.append((table, tuple(pairs)))
    return ColumnMap(str(path), hashlib.sha256(data).hexdigest(), tuple(tables))


def _all_tables() -> list[str]:
    import ecarte_schemas

    return list(ecarte_schemas.MODELS)


# -- matching a header -------------------------------------------------------------------

@dataclass
class HeaderMatch:
    """How one header row was understood."""

    keep: dict[str, int] = field(default_factory=dict)            # carnet column → source index
    how: dict[str, str] = field(default_factory=dict)             # carnet column → name/variant/mapping
    ambiguous: dict[str, list[int]] = field(default_factory=dict)  # carnet column → source indexes
    ambiguous_how: dict[str, list[str]] = field(default_factory=dict)  # … and how each reached it
    ignored: list[int] = field(default_factory=list)              # named source columns not used
    extra: dict[str, int] = field(default_factory=dict)           # those, by canonical name (kept as text)
    required_found: int = 0
    found: int = 0

    def complete(self, spec: TableColumns) -> bool:
        """Every required column of `spec` was found in the header."""
        return self.required_found == len(spec.required)


# table, header texts, mapping → HeaderMatch: the same header comes with every
# carnet of a batch. Bounded; each caller gets its own copy.
_MATCHES: dict[tuple, HeaderMatch] = {}
_MATCHES_MAX = 2048


def match_header(table: str, header: list, mapping: ColumnMap | None = None) -> HeaderMatch:
    """Match one row of header cells (text) against `table`'s columns."""
    # What is matched is each cell's text (None: empty): the key.
    key = (table, tuple("" if cell is None else str(cell) for cell in header), mapping)
    found = _MATCHES.get(key)
    if found is None:
        if len(_MATCHES) >= _MATCHES_MAX:
            _MATCHES.clear()
        found = _MATCHES[key] = _match_header(table, list(key[1]), mapping)
    return _copy(found)


def _copy(m: HeaderMatch) -> HeaderMatch:
    return HeaderMatch(dict(m.keep), dict(m.how), {k: list(v) for k, v in m.ambiguous.items()},
                       {k: list(v) for k, v in m.ambiguous_how.items()}, list(m.ignored), dict(m.extra),
                       m.required_found, m.found)


def _match_header(table: str, header: list[str], mapping: ColumnMap | None) -> HeaderMatch:
    from auditor.read.raw import canonical_name

    spec = table_columns(table)
    out = HeaderMatch()
    if spec is None:   # not a carnet table: its named columns are kept as they are
        for i, cell in enumerate(header):
            name = canonical_name("" if cell is None else cell)
            if name and name not in out.extra:
                out.extra[name] = i
                out.ignored.append(i)
        return out
    mapped = mapping.for_table(table) if mapping is not None else {}
    hits: dict[str, list[tuple[int, str]]] = {}
    for i, cell in enumerate(header):
        text = "" if cell is None else str(cell)
        if not text.strip():
            continue
        key = fold(text)
        if fold_source(text) in mapped:
            column, how = mapped[fold_source(text)], "mapping"
        elif key in spec.names:
            column = spec.names[key]
            how = "name" if key == fold(column) else "variant"
        else:
            out.ignored.append(i)
            continue
        hits.setdefault(column, []).append((i, how))
    for column, found in hits.items():
        if len(found) > 1:
            out.ambiguous[column] = [i for i, _ in found]
            out.ambiguous_how[column] = [how for _, how in found]
        else:
            out.keep[column] = found[0][0]
            out.how[column] = found[0][1]
    for i in out.ignored:
        name = canonical_name(header[i])
        if name and name not in hits and name not in out.extra and name not in spec.columns:
            out.extra[name] = i
    out.found = len(hits)
    out.required_found = sum(1 for c in spec.required if c in hits)
    return out


HEADER_SEARCH_ROWS = 20


def find_header(table: str, rows: list[list], mapping: ColumnMap | None = None) -> tuple[int, HeaderMatch] | None:
    """The header among the first rows: the first that holds every required
    column, else the one that names the most of them (the first such), else
    the first non-empty row. Returns (index in `rows`, match), None if all
    rows are empty."""
    best: tuple[int, HeaderMatch] | None = None
    first: tuple[int, HeaderMatch] | None = None
    spec = table_columns(table)
    for index, row in enumerate(rows[:HEADER_SEARCH_ROWS]):
        if not any(str(v).strip() for v in row if v is not None):
            continue
        match = match_header(table, row, mapping)
        if first is None:
            first = (index, match)
        if spec is not None and match.complete(spec):
            return index, match
        if match.found and (best is None or (match.required_found, match.found) >
                            (best[1].required_found, best[1].found)):
            best = (index, match)
    return best or first


_TOTALS = ("total", "totaux", "sous_total", "sous_totaux")


def is_totals_label(text: object) -> bool:
    """`Total`, `TOTAUX :`, `Sous-total séance 2`: a totals row's first cell."""
    key = fold(text)
    return any(key == word or key.startswith(word + "_") for word in _TOTALS)


AMBIGUOUS_KINDS = ("ambiguous_column", "ambiguous_mapping")


def ambiguity_problems(table: str, header: list, match: HeaderMatch, row: int) -> list:
    """One EC00-01 per carnet column two source columns reach, naming both
    and where the conflict comes from: the header's names alone (a
    `--columns` file can say which), or the `--columns` file itself (which
    then is what to correct)."""
    from auditor.read.raw import ReadProblem, column_letter

    out = []
    for column, indexes in match.ambiguous.items():
        kind = "ambiguous_mapping" if "mapping" in match.ambiguous_how.get(column, ()) else "ambiguous_column"
        out.append(ReadProblem("EC00-01", kind, table=table, row=row, column=column, params={
            "table": table, "column": column,
            "sources": ", ".join(f"« {header[i]} » ({column_letter(i)})" for i in indexes)}))
    return out
