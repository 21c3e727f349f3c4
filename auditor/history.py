"""The findings history, a ledger: every run appended as one Parquet file,
folded into a compact ledger, queried with DuckDB.

A run writes its own file (`run-<time>-<id>.parquet`), under a hidden
temporary name renamed into place: two runs writing at once never touch each
other's file, a reader sees a run whole or not at all. The file is one flat
table (`row_kind`: a `carnet` row per carnet audited, a `finding` row per
finding, a `seance` row per séance with its totals, a `review` row per
decision on a finding the run did not see), so Dask or Spark read it as it is.

Then the run folds every run file into the ledger (`ledger-<time>-<id>/`,
written whole under a temporary name and renamed, the run files it holds
removed after): a finding seen night after night with the same values is
one *span* (its first and last audit of its carnet), a carnet's séances are
kept once per content (its SHA-256), so a year of nights over thousands of
carnets stays a few hundred thousand rows. Readers take the newest ledger
and the run files it does not hold yet; the views (`findings`,
`observations`, `runs`, `carnets`, `seances`, docs/history.md) are the same
whether a run is folded or not. A history written before the ledger (run
files only, without `row_kind`) is read as it is and folded by the next run.

It holds what the carnet says and what the user typed (reviews), with the
run's time and the tool's version: nothing about the machine or the user's
session.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import uuid
from pathlib import Path

from auditor.errors import UsageError

PATTERN = "run-*.parquet"
LEDGER_PATTERN = "ledger-*"

RUN_COLUMNS = ("run_id", "run_at", "tool_version", "profile", "row_kind")
CARNET_COLUMNS = ("carnet_id", "carnet_path", "carnet_sha256", "casino", "table_no", "date_debut", "period_start",
                  "period_end", "seance_first", "seance_first_date", "seance_last", "seance_last_date", "verdict",
                  "errors", "warnings", "info", "carnet_impact_cents", "levy_expected_cents",
                  "levy_recorded_cents", "seances", "coups", "mises")
FINDING_COLUMNS = ("fingerprint", "code", "severity", "article", "message", "seance", "seance_date", "coup",
                   "rang", "row", "cell", "expected", "found", "impact_cents", "baseline_state", "review_status",
                   "review_by", "review_at", "review_justification", "review_stale")
SEANCE_COLUMNS = ("seance_coups", "seance_winning_mass_cents", "seance_levy_expected_cents",
                  "seance_levy_recorded_cents", "seance_cagnotte_cents", "seance_tickets_face_cents")
REVIEW_COLUMNS = ("review_status", "review_by", "review_at", "review_justification", "review_stale")
COLUMNS = (*RUN_COLUMNS, *CARNET_COLUMNS, *FINDING_COLUMNS, *SEANCE_COLUMNS)

_DAYS = {"date_debut", "period_start", "period_end", "seance_first_date", "seance_last_date", "seance_date"}
_WHOLE = {"table_no", "seance_first", "seance_last", "errors", "warnings", "info", "carnet_impact_cents",
          "levy_expected_cents", "levy_recorded_cents", "seances", "coups", "mises", "seance", "coup", "rang",
          "row", "impact_cents", *SEANCE_COLUMNS}


def _type(column: str) -> str:
    """The column's SQL type (DuckDB's names; the Parquet files hold the same)."""
    if column == "run_at":
        return "TIMESTAMP WITH TIME ZONE"
    if column in _DAYS:
        return "DATE"
    if column in _WHOLE:
        return "BIGINT"
    if column == "review_stale":
        return "BOOLEAN"
    return "VARCHAR"


def _schema():
    import pyarrow as pa

    arrow = {"TIMESTAMP WITH TIME ZONE": pa.timestamp("s", tz="UTC"), "DATE": pa.date32(), "BIGINT": pa.int64(),
             "BOOLEAN": pa.bool_(), "VARCHAR": pa.string()}
    return pa.schema([(c, arrow[_type(c)]) for c in COLUMNS])


def _day(text):
    import datetime as dt

    try:
        return dt.date.fromisoformat(text) if text else None
    except (TypeError, ValueError):
        return None


def run_rows(run: dict, carnets: list[tuple], reviews: list[dict] = (), known: set[str] = frozenset()) -> list[dict]:
    """The run's rows: `carnets` holds, per carnet, its summary entry, its
    findings' rows (auditor.baseline.history_rows) and its séances' totals
    (report.seance_totals, None when unknown); `reviews`, the decisions on
    findings this run did not see (an acknowledged `corrige`…); `known`, the
    carnet contents (SHA-256) whose séances the ledger already holds."""
    import datetime as dt

    at = dt.datetime.strptime(run["run_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)
    head = {**run, "run_at": at}
    rows = []
    for entry, findings, seances in carnets:
        s, c, period = entry["summary"], entry.get("carnet") or {}, entry.get("period") or {}
        seances = seances or []
        first, last = (seances[0], seances[-1]) if seances else ({}, {})
        base = {**head, "carnet_id": entry["id"], "carnet_path": entry["path"],
                "carnet_sha256": entry.get("sha256"), "casino": c.get("casino"), "table_no": c.get("table"),
                "date_debut": _day(c.get("date_debut")), "period_start": _day(period.get("first")),
                "period_end": _day(period.get("last")), "seance_first": first.get("seance"),
                "seance_first_date": _day(first.get("seance_date")), "seance_last": last.get("seance"),
                "seance_last_date": _day(last.get("seance_date")), "verdict": entry.get("verdict"),
                "errors": s["errors"], "warnings": s["warnings"], "info": s["info"],
                "carnet_impact_cents": s["impact_cents"], "levy_expected_cents": s.get("levy_expected_cents"),
                "levy_recorded_cents": s.get("levy_recorded_cents"), "seances": s.get("seances"),
                "coups": s.get("coups"), "mises": s.get("mises")}
        rows.append({**base, "row_kind": "carnet"})
        for f in findings:
            kind = f.get("row_kind", "finding")
            row = {**base, **{k: f.get(k) for k in FINDING_COLUMNS}, "row_kind": kind,
                   "seance_date": _day(f.get("seance_date"))}
            rows.append(row)
        for t in () if entry.get("sha256") in known else seances:
            rows.append({**base, "row_kind": "seance", "seance": t["seance"], "seance_date": _day(t["seance_date"]),
                         "seance_coups": t["coups"], "seance_winning_mass_cents": t["winning_mass_cents"],
                         "seance_levy_expected_cents": t["levy_expected_cents"],
                         "seance_levy_recorded_cents": t["levy_recorded_cents"],
                         "seance_cagnotte_cents": t["cagnotte_cents"],
                         "seance_tickets_face_cents": t["tickets_face_cents"]})
    for r in reviews:
        rows.append({**head, "row_kind": "review", **{k: r.get(k) for k in ("fingerprint", *REVIEW_COLUMNS)}})
    return rows


def append_run(folder: Path, run: dict, carnets: list[tuple], reviews: list[dict] = ()) -> Path:
    """Write this run's file into `folder`, atomically, then fold the history
    into its ledger (when no other run is folding it); return the run's file."""
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    # A carnet whose content the ledger already holds keeps its séances there: not written again.
    table = rows_table(run_rows(run, carnets, reviews, _known_contents(folder)))
    stamp = run["run_at"].replace("-", "").replace(":", "")
    final = folder / f"run-{stamp}-{run['run_id']}.parquet"
    tmp = folder / f".{final.name}.{os.getpid()}.tmp"
    try:
        pq.write_table(table, tmp, compression="zstd")
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, final)
    finally:
        if tmp.exists():
            tmp.unlink()
    compact(folder)
    return final


def rows_table(rows: list[dict]):
    """The rows as an Arrow table of the history's columns and types
    (`pyarrow.Table.from_pylist(rows, schema)`'s table). They go through
    Arrow's JSON reader: `from_pylist` asks of each column whether it is a
    pandas object, which imports pandas (0.4 s of a night from the cache)."""
    import datetime as dt
    import io
    import json

    import pyarrow.json as pj

    schema = _schema()
    if not rows:
        return schema.empty_table()
    epoch = dt.date(1970, 1, 1)

    def cell(value):
        # The reader takes a timestamp as ISO text, a date as days since 1970.
        if isinstance(value, dt.datetime):
            return value.astimezone(dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        if isinstance(value, dt.date):
            return (value - epoch).days
        raise TypeError(f"{value.__class__.__name__} in the history's rows")

    data = "\n".join(json.dumps({k: r[k] for k in COLUMNS if r.get(k) is not None}, ensure_ascii=False,
                                 default=cell) for r in rows).encode("utf-8")
    return pj.read_json(io.BytesIO(data), read_options=pj.ReadOptions(use_threads=False, block_size=len(data) + 1),
                        parse_options=pj.ParseOptions(explicit_schema=schema, unexpected_field_behavior="error"))


def _known_contents(folder: Path) -> set[str]:
    """The carnet contents (SHA-256) whose séances the newest ledger holds."""
    import pyarrow.parquet as pq

    ledgers = _ledgers(folder)
    if not ledgers:
        return set()
    try:
        # One file's column: ParquetFile, not read_table (whose datasets import pandas, 0.4 s of a night).
        column = pq.ParquetFile(ledgers[-1] / "seances.parquet").read(columns=["carnet_sha256"]).column(0)
        return set(column.unique().to_pylist())
    except (OSError, ValueError, KeyError):
        return set()


def readable_runs(folder: Path) -> tuple[list[Path], list[Path]]:
    """The run files (not folded yet) whose Parquet footer reads, and those
    that do not: a damaged file is left aside, kept as it is, and named."""
    good, bad = [], []
    paths = sorted(folder.glob(PATTERN))
    if not paths:
        return good, bad   # the usual case once folded: no need of pyarrow to say so
    import pyarrow.parquet as pq

    for path in paths:
        try:
            pq.read_metadata(path)
            good.append(path)
        except (OSError, ValueError):
            bad.append(path)
    return good, bad


def new_run_id() -> str:
    """A new run's id in the history."""
    return uuid.uuid4().hex[:12]


# -- reading ---------------------------------------------------------------------

def _listing(paths) -> str:
    return "[" + ", ".join("'" + str(p).replace("'", "''") + "'" for p in paths) + "]"


def _empty(columns) -> str:
    """An empty relation with these columns and their types: what a missing file reads as."""
    return "SELECT " + ", ".join(f"CAST(NULL AS {_type(c)}) AS {c}" for c in columns) + " WHERE false"


# The ledger's tables: their columns (types as the run files', plus the spans' own).
SPAN_COLUMNS = ("fingerprint", "carnet_id", *FINDING_COLUMNS[1:], "first_seq", "last_seq", "first_run_at",
                "last_run_at", "runs")
STATE_COLUMNS = (*CARNET_COLUMNS, "first_seq", "last_seq", "first_run_at", "last_run_at")
LEDGER_TABLES = {
    "runs": RUN_COLUMNS[:4],
    "audits": ("run_id", "run_at", "carnet_id", "seq"),      # each audit of a carnet, numbered in run order
    "states": STATE_COLUMNS,                                # a carnet's values over consecutive audits
    "spans": SPAN_COLUMNS,                                  # a finding's values over consecutive audits
    "seances": ("carnet_sha256", "run_at", "seance", "seance_date", *SEANCE_COLUMNS),
    "reviews": ("fingerprint", "run_at", *REVIEW_COLUMNS),
}
_EXTRA_TYPES = {"seq": "BIGINT", "first_seq": "BIGINT", "last_seq": "BIGINT", "runs": "BIGINT",
                "first_run_at": "TIMESTAMP WITH TIME ZONE", "last_run_at": "TIMESTAMP WITH TIME ZONE"}


def _typed(c: str) -> str:
    return _EXTRA_TYPES.get(c) or _type(c)


def _empty_ledger(name: str) -> str:
    return "SELECT " + ", ".join(f"CAST(NULL AS {_typed(c)}) AS {c}" for c in LEDGER_TABLES[name]) + " WHERE false"


def _ledgers(folder: Path) -> list[Path]:
    """The complete ledgers, oldest first (a ledger is renamed into place whole)."""
    return sorted(p for p in folder.glob(LEDGER_PATTERN)
                  if p.is_dir() and all((p / f"{name}.parquet").is_file() for name in LEDGER_TABLES))


def _values(prefix: str = "") -> str:
    """The finding's values (all but its fingerprint), quoted (`row` is a word of SQL)."""
    return ", ".join(f'{prefix}"{c}"' for c in FINDING_COLUMNS[1:])


def _base(con, folder: Path, runs: list[Path], ledger: Path | None) -> None:
    """The base relations over the ledger and the run files it does not hold:
    _raw, _audits (with each carnet's audit number `seq`), _spans, _seances, _reviews, _runs."""
    for name in LEDGER_TABLES:
        source = (f"SELECT * FROM read_parquet({_listing([ledger / (name + '.parquet')])})" if ledger is not None
                  else _empty_ledger(name))
        con.execute(f"CREATE VIEW _ledger_{name} AS {source}")
    template = _empty(COLUMNS)
    if runs:
        # Only the run files the ledger does not hold yet (a run folded while
        # this reader listed the folder is read once).
        con.execute(f"CREATE VIEW _raw AS SELECT * FROM ({template}) UNION ALL BY NAME "
                    f"SELECT * FROM read_parquet({_listing(runs)}, union_by_name = true) "
                    "WHERE run_id NOT IN (SELECT run_id FROM _ledger_runs)")
    else:
        con.execute(f"CREATE VIEW _raw AS {template}")
    con.execute("""
        CREATE VIEW _runs AS
        SELECT * FROM _ledger_runs
        UNION ALL BY NAME SELECT DISTINCT run_id, run_at, tool_version, profile FROM _raw""")
    carnet = ", ".join(CARNET_COLUMNS)
    # A run file written before the ledger has no `row_kind`: each of its rows carries its carnet.
    # Its audits are numbered after the ledger's of the same carnet.
    con.execute(f"""
        CREATE VIEW _raw_audits AS
        SELECT r.*, coalesce(l.seq, 0) + row_number() OVER (PARTITION BY r.carnet_id ORDER BY run_at, run_id) AS seq
        FROM (SELECT DISTINCT ON (run_id, carnet_id) run_id, run_at, {carnet} FROM _raw
              WHERE row_kind IS NULL OR row_kind = 'carnet') r
        LEFT JOIN (SELECT carnet_id, max(seq) AS seq FROM _ledger_audits
                   WHERE carnet_id IN (SELECT carnet_id FROM _raw) GROUP BY ALL) l USING (carnet_id)""")
    con.execute("""
        CREATE VIEW _audits AS
        SELECT run_id, run_at, carnet_id, seq FROM _ledger_audits
        UNION ALL SELECT run_id, run_at, carnet_id, seq FROM _raw_audits""")
    con.execute(f"""
        CREATE VIEW _states AS
        SELECT * FROM _ledger_states
        UNION ALL BY NAME
        SELECT {carnet}, seq AS first_seq, seq AS last_seq, run_at AS first_run_at, run_at AS last_run_at
        FROM _raw_audits""")
    con.execute(f"""
        CREATE VIEW _spans AS
        SELECT * FROM _ledger_spans
        UNION ALL BY NAME
        SELECT f.fingerprint, f.carnet_id, {_values('f.')}, a.seq AS first_seq, a.seq AS last_seq,
               f.run_at AS first_run_at, f.run_at AS last_run_at, 1 AS runs
        FROM (SELECT DISTINCT ON (run_id, fingerprint) * FROM _raw
              WHERE fingerprint IS NOT NULL AND (row_kind IS NULL OR row_kind = 'finding')
              ORDER BY run_id, fingerprint, carnet_id) f
        JOIN _raw_audits a ON a.run_id = f.run_id AND a.carnet_id = f.carnet_id""")
    seance = ", ".join(SEANCE_COLUMNS)
    # The ledger holds each carnet content's séances once; a run file's are
    # added where the ledger lacks them (the latest run's when several have:
    # in the history's run order, time then run id — RUN_ORDER).
    con.execute(f"""
        CREATE VIEW _seances AS
        SELECT * FROM _ledger_seances
        UNION ALL BY NAME
        SELECT * EXCLUDE (run_id) FROM (
            SELECT DISTINCT ON (carnet_sha256, seance) * FROM (
                SELECT coalesce(carnet_sha256, carnet_id) AS carnet_sha256, run_at, run_id, seance, seance_date,
                       {seance}
                FROM _raw WHERE row_kind = 'seance')
            ORDER BY carnet_sha256, seance, run_at DESC, run_id DESC) r
        WHERE NOT EXISTS (SELECT 1 FROM _ledger_seances l
                          WHERE l.carnet_sha256 = r.carnet_sha256 AND l.seance = r.seance)""")
    review = ", ".join(REVIEW_COLUMNS)
    con.execute(f"""
        CREATE VIEW _reviews AS
        SELECT * FROM _ledger_reviews
        UNION ALL BY NAME SELECT DISTINCT fingerprint, run_at, {review} FROM _raw WHERE row_kind = 'review'""")


VIEWS = {
    "runs": """
        SELECT r.run_id, r.run_at, r.tool_version, r.profile, coalesce(a.carnets, 0) AS carnets
        FROM _runs r LEFT JOIN (SELECT run_id, count(*) AS carnets FROM _audits GROUP BY run_id) a USING (run_id)""",
    "carnets": f"""
        SELECT s.carnet_id, carnet_path, carnet_sha256, casino, table_no, date_debut, period_start, period_end,
               seance_first, seance_first_date, seance_last, seance_last_date, verdict, errors, warnings, info,
               carnet_impact_cents AS impact_cents, levy_expected_cents, levy_recorded_cents, seances, coups,
               mises, a.run_id AS last_run_id, a.run_at AS last_audited_at, first_audited_at, audits
        FROM (SELECT *, min(first_run_at) OVER w AS first_audited_at,
                     sum(last_seq - first_seq + 1) OVER w AS audits,
                     row_number() OVER (PARTITION BY carnet_id ORDER BY last_seq DESC) AS n
              FROM _states WINDOW w AS (PARTITION BY carnet_id)) s
        JOIN _audits a ON a.carnet_id = s.carnet_id AND a.seq = s.last_seq
        WHERE n = 1""",
    "observations": f"""
        SELECT a.run_id, a.run_at, s.fingerprint, s.carnet_id, c.casino, c.table_no, {_values('s.')}
        FROM _spans s JOIN _audits a ON a.carnet_id = s.carnet_id AND a.seq BETWEEN s.first_seq AND s.last_seq
        JOIN _states c ON c.carnet_id = a.carnet_id AND a.seq BETWEEN c.first_seq AND c.last_seq""",
    "seances": """
        SELECT c.carnet_id, c.casino, c.table_no, s.seance, s.seance_date, s.seance_coups AS coups,
               s.seance_winning_mass_cents AS winning_mass_cents,
               s.seance_levy_expected_cents AS levy_expected_cents,
               s.seance_levy_recorded_cents AS levy_recorded_cents, s.seance_cagnotte_cents AS cagnotte_cents,
               s.seance_tickets_face_cents AS tickets_face_cents, c.last_audited_at
        FROM carnets c JOIN _seances s ON s.carnet_sha256 = coalesce(c.carnet_sha256, c.carnet_id)""",
}

# RUN_ORDER. "The latest" of a finding's observations is the latest run, in
# the history's run order: the run's time, then (two runs in one second) its
# run id — the order the audits of a carnet are numbered in, folded or not.
# A span's latest run is that of its last audit (looked up only where one
# finding has several spans ending in one second: reading every audit's run
# id costs half the `findings` view again). A decision recorded in a run
# that did not see the finding (a `review` row: absent, orphan, acknowledged;
# the ledger keeps its time, not its run) counts at its run's time, after the
# sightings of that second. Every key ends in values that tell any two rows
# apart: a tie left to arg_max or DISTINCT ON gives whichever row DuckDB
# meets first, which changes with the files, the fold and the query's plan.
_REVIEW_KEY = ("a := coalesce(review_at, ''), s := coalesce(review_status, ''), b := coalesce(review_by, ''), "
               "j := coalesce(review_justification, ''), x := coalesce(review_stale, false)")

# Each finding once: its latest values (the latest span that saw it), when it
# was first and last seen, when it was closed — the first audit of its carnet
# (or of a carnet with the same cover: renamed) after it was last seen, or an
# acknowledgement (`corrige`) recorded after it was last seen — and its latest
# review: the one its latest observation carrying a review had, with whether
# it was stale then (several observations carry one decision, the same
# `review_at`: stale in the last, not in the first).
FINDINGS = f"""
    WITH tied AS (   -- the rare times at which one finding has several spans end (two runs in one second)
        SELECT DISTINCT last_run_at FROM _spans GROUP BY fingerprint, last_run_at HAVING count(*) > 1),
    sighted AS (
        SELECT s.*, coalesce(a.run_id, '') AS last_run_id
        FROM _spans s LEFT JOIN (SELECT * FROM _audits WHERE run_at IN (SELECT last_run_at FROM tied)) a
        ON a.carnet_id = s.carnet_id AND a.seq = s.last_seq),
    latest AS (
        SELECT fingerprint, min(first_run_at) AS first_seen, max(last_run_at) AS last_seen, CAST(sum(runs) AS BIGINT) AS seen_runs,
               arg_max(s, struct_pack(t := last_run_at, o := last_run_id, c := carnet_id, q := last_seq)) AS v
        FROM sighted s GROUP BY fingerprint),
    f AS (SELECT l.fingerprint, l.first_seen, l.last_seen, l.seen_runs, l.v.carnet_id AS carnet_id,
                 l.v.last_seq AS last_seq, c.casino, c.table_no, c.seance_first, c.seance_first_date,
                 {', '.join(f'l.v."{c}" AS "{c}"' for c in FINDING_COLUMNS[1:])}
          FROM latest l JOIN _states c ON c.carnet_id = l.v.carnet_id
                                      AND l.v.last_seq BETWEEN c.first_seq AND c.last_seq),
    next_audit AS (
        SELECT f.fingerprint, a.run_at AS absent_at FROM f JOIN _audits a
        ON a.carnet_id = f.carnet_id AND a.seq = f.last_seq + 1),
    covers AS (
        SELECT casino, table_no, seance_first, seance_first_date, carnet_id, max(last_run_at) AS last_run_at
        FROM _states WHERE seance_first IS NOT NULL GROUP BY ALL),
    siblings AS (
        SELECT f.fingerprint, f.last_seen, c.carnet_id FROM f JOIN covers c
        USING (casino, table_no, seance_first, seance_first_date)
        WHERE c.carnet_id <> f.carnet_id AND c.last_run_at > f.last_seen),
    renamed AS (
        SELECT s.fingerprint, min(a.run_at) AS absent_at FROM siblings s JOIN _audits a USING (carnet_id)
        WHERE a.run_at > s.last_seen GROUP BY ALL),
    reviewed AS (
        SELECT fingerprint, arg_max(r, k) AS r FROM (
            SELECT fingerprint, struct_pack({', '.join(REVIEW_COLUMNS)}) AS r,
                   struct_pack(t := last_run_at, w := 1, o := last_run_id, c := carnet_id, q := last_seq,
                               {_REVIEW_KEY}) AS k
            FROM sighted WHERE review_status IS NOT NULL
            UNION ALL
            SELECT fingerprint, struct_pack({', '.join(REVIEW_COLUMNS)}) AS r,
                   struct_pack(t := run_at, w := 0, o := '', c := '', q := CAST(0 AS BIGINT),
                               {_REVIEW_KEY}) AS k
            FROM _reviews)
        GROUP BY fingerprint),
    closed AS (
        SELECT f.*, rv.r AS r,
               least(n.absent_at, m.absent_at,
                     CASE WHEN rv.r.review_status = 'corrige'
                               AND try_cast(rv.r.review_at AS TIMESTAMPTZ) >= f.last_seen
                          THEN try_cast(rv.r.review_at AS TIMESTAMPTZ) END) AS closed_at
        FROM f LEFT JOIN next_audit n USING (fingerprint) LEFT JOIN renamed m USING (fingerprint)
        LEFT JOIN reviewed rv USING (fingerprint))
    SELECT fingerprint, code, severity, article, message, casino, table_no, carnet_id, seance, seance_date, coup,
           rang, "row", cell, expected, found, impact_cents, first_seen, last_seen, closed_at,
           closed_at IS NULL AS open, r.review_status AS review_status, r.review_by AS review_by,
           r.review_at AS review_at, r.review_justification AS review_justification,
           coalesce(r.review_stale, false) AS review_stale, baseline_state, seen_runs
    FROM closed"""

PUBLIC_VIEWS = ("findings", "observations", "runs", "carnets", "seances")


def connect(folder: Path):
    """A DuckDB connection (in memory, no server) with the views of PUBLIC_VIEWS."""
    import duckdb

    if not folder.is_dir():
        raise UsageError("history.no_folder", folder=folder)
    ledgers = _ledgers(folder)
    runs, _ = readable_runs(folder)
    if not runs and not ledgers:
        raise UsageError("history.no_run", folder=folder, pattern=PATTERN)
    con = duckdb.connect(":memory:")
    con.execute("SET enable_progress_bar = false")   # the answer alone on stdout
    try:
        _base(con, folder, runs, ledgers[-1] if ledgers else None)
        for name, sql in VIEWS.items():
            con.execute(f"CREATE VIEW {name} AS {sql}")
        con.execute(f"CREATE VIEW findings AS {FINDINGS}")
    except duckdb.Error as exc:   # a ledger's file damaged (a disk, a copy cut short)
        con.close()
        raise UsageError("history.unreadable", folder=folder, reason=str(exc).splitlines()[0]) from None
    return con


# -- folding ---------------------------------------------------------------------

@contextlib.contextmanager
def _lock(folder: Path):
    """Held by the one run folding the history; others leave it to the next (yield False)."""
    try:
        import fcntl
    except ImportError:   # not a POSIX system: one run at a time is the user's to ensure
        yield True
        return
    with open(folder / ".ledger.lock", "a+b") as f:
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(f.fileno(), fcntl.LOCK_UN)


def _segments(source: str, keys: tuple[str, ...], values: tuple[str, ...], counted: bool) -> str:
    """Segments of `source` (keys, values, first/last seq and run time) merged
    where one follows the other (the next audit of the carnet) with the same
    values: the spans of a finding, the states of a carnet."""
    key = ", ".join(keys)
    vals = ", ".join(f'"{c}"' for c in values)
    runs = ", CAST(sum(runs) AS BIGINT) AS runs" if counted else ""
    return f"""
    WITH marked AS (
        SELECT *, CASE WHEN lag(last_seq) OVER w + 1 = first_seq
                        AND lag(struct_pack({vals})) OVER w IS NOT DISTINCT FROM struct_pack({vals})
                       THEN 0 ELSE 1 END AS brk
        FROM {source} WINDOW w AS (PARTITION BY {key} ORDER BY first_seq)),
    islands AS (SELECT *, sum(brk) OVER (PARTITION BY {key} ORDER BY first_seq) AS island FROM marked)
    SELECT {key}, {', '.join(f'first("{c}" ORDER BY first_seq) AS "{c}"' for c in values)},
           min(first_seq) AS first_seq, max(last_seq) AS last_seq, min(first_run_at) AS first_run_at,
           max(last_run_at) AS last_run_at{runs}
    FROM islands GROUP BY {key}, island"""


def compact(folder: Path) -> Path | None:
    """Fold every run file into a new ledger, when no other run is folding
    this history; return the new ledger (None: nothing to fold, or left to
    another run). Readers see the old ledger and the run files, or the new
    ledger: never both counted."""
    import duckdb

    try:
        with _lock(folder) as mine:
            if not mine:
                return None
            return _fold(folder)
    except (OSError, duckdb.Error):
        return None   # the run files stay readable as they are; the next run folds them


def _fold(folder: Path) -> Path | None:
    import duckdb

    ledgers = _ledgers(folder)
    runs, _ = readable_runs(folder)
    if not runs:
        return None
    con = duckdb.connect(":memory:")
    _base(con, folder, runs, ledgers[-1] if ledgers else None)
    latest = con.execute("SELECT max(run_at) FROM _ledger_runs").fetchone()[0]
    late = latest is not None and con.execute("SELECT count(*) FROM _raw WHERE run_at <= ?",
                                              [latest]).fetchone()[0] > 0
    if late:
        # A run older than the ledger's newest (two runs at once, a clock set
        # back): every audit renumbered, every span and state read audit by audit.
        con.execute("""CREATE TABLE audits AS SELECT * EXCLUDE (seq),
                       row_number() OVER (PARTITION BY carnet_id ORDER BY run_at, run_id) AS seq FROM _audits""")
        con.execute(f"""CREATE TABLE points AS
            SELECT s.fingerprint, s.carnet_id, {_values('s.')}, b.seq AS first_seq, b.seq AS last_seq,
                   b.run_at AS first_run_at, b.run_at AS last_run_at, 1 AS runs
            FROM _spans s JOIN _audits a ON a.carnet_id = s.carnet_id AND a.seq BETWEEN s.first_seq AND s.last_seq
            JOIN audits b ON b.run_id = a.run_id AND b.carnet_id = a.carnet_id""")
        con.execute(f"""CREATE TABLE state_points AS
            SELECT {', '.join('s.' + c for c in CARNET_COLUMNS)}, b.seq AS first_seq, b.seq AS last_seq,
                   b.run_at AS first_run_at, b.run_at AS last_run_at
            FROM _states s JOIN _audits a ON a.carnet_id = s.carnet_id AND a.seq BETWEEN s.first_seq AND s.last_seq
            JOIN audits b ON b.run_id = a.run_id AND b.carnet_id = a.carnet_id""")
        spans, states = "points", "state_points"
    else:
        con.execute("CREATE TABLE audits AS SELECT * FROM _audits")
        spans, states = "_spans", "_states"
    con.execute(f"CREATE TABLE spans AS {_segments(spans, ('fingerprint', 'carnet_id'), FINDING_COLUMNS[1:], True)}")
    con.execute(f"CREATE TABLE states AS {_segments(states, ('carnet_id',), CARNET_COLUMNS[1:], False)}")
    con.execute("CREATE TABLE runs AS SELECT DISTINCT * FROM _runs")
    con.execute("CREATE TABLE seances AS SELECT * FROM _seances")
    con.execute("CREATE TABLE reviews AS SELECT DISTINCT * FROM _reviews")
    name = f"ledger-{_stamp()}-{uuid.uuid4().hex[:8]}"
    tmp = folder / f".{name}.{os.getpid()}.tmp"
    tmp.mkdir()
    try:
        for table, columns in LEDGER_TABLES.items():
            order = {"audits": "ORDER BY carnet_id, seq", "spans": "ORDER BY fingerprint, first_seq",
                     "states": "ORDER BY carnet_id, first_seq"}.get(table, "")
            target = str(tmp / f"{table}.parquet").replace("'", "''")
            con.execute(f"COPY (SELECT {', '.join(columns)} FROM {table} {order}) TO '{target}' "
                        "(FORMAT parquet, COMPRESSION zstd)")
        con.close()
        final = folder / name
        os.replace(tmp, final)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    # What the new ledger holds is no longer needed elsewhere.
    for old in ledgers:
        shutil.rmtree(old, ignore_errors=True)
    for path in runs:
        path.unlink(missing_ok=True)
    return final


def _stamp() -> str:
    """The ledger's name orders ledgers by when they were folded (not the run's clock: a late run folds later)."""
    import time

    return f"{time.time_ns():020d}"


# -- answers ---------------------------------------------------------------------

SEVERITIES = ("error", "warning", "info")
CLEARED = ("justifie", "faux_positif")

# Money: open findings that are neither justified nor false positives (a stale
# justification no longer clears, as for the exit status).
_AT_STAKE = ("open AND NOT (coalesce(review_status, '') IN ('justifie', 'faux_positif') "
             "AND NOT review_stale)")

QUERIES = {
    "money": f"""
        SELECT casino, table_no, strftime(seance_date, '%Y-%m') AS month,
               count(*) AS findings, sum(stake_cents) AS impact_cents
        FROM selected WHERE {_AT_STAKE}
        GROUP BY ALL HAVING sum(stake_cents) > 0 ORDER BY casino, table_no, month""",
    "codes": """
        SELECT code, strftime(seance_date, '%Y-%m') AS month, count(*) AS findings,
               count(*) FILTER (WHERE open) AS open
        FROM selected GROUP BY ALL ORDER BY code, month""",
    "open": f"""
        SELECT casino, table_no, code, severity, seance, seance_date,
               date_diff('day', seance_date, CAST($today AS DATE)) AS age_days, coup, impact_cents,
               strftime(first_seen, '%Y-%m-%d') AS first_seen, review_status, fingerprint
        FROM selected WHERE {_AT_STAKE}
          AND ($since IS NULL OR first_seen <= CAST($since AS DATE) + INTERVAL 1 DAY)
        ORDER BY seance_date NULLS LAST, casino, table_no, seance, coup, code""",
}

# The headings of `ecarte-audit history`, keys of the command line's label files.
TITLES = {"money": "history.title_money", "codes": "history.title_codes", "open": "history.title_open"}


def parse_severities(text: str | None) -> tuple[str, ...] | None:
    """`--severity error,warning` as a tuple (None: every severity)."""
    if text is None:
        return None
    chosen = tuple(dict.fromkeys(p.strip().lower() for p in text.split(",") if p.strip()))
    if not chosen or any(s not in SEVERITIES for s in chosen):
        raise UsageError("history.bad_severity", severity=text, choices=", ".join(SEVERITIES))
    return chosen


def today() -> str:
    """Today's date as the run's clock gives it (SOURCE_DATE_EPOCH when set)."""
    from auditor.clock import generated_at

    return generated_at()[:10]


def select(con, severities: tuple[str, ...] | None = None, older_than: int | None = None,
           table: bool = False) -> None:
    """The view `selected`: the findings that --severity and --older-than keep
    (age counted from the séance's date, not the run's); `table`: computed
    once, for several questions in a row."""
    where = ["true"]
    if severities:
        where.append("severity IN (" + ", ".join(f"'{s}'" for s in severities) + ")")
    if older_than is not None:
        where.append(f"seance_date <= CAST('{today()}' AS DATE) - INTERVAL {int(older_than)} DAY")
    kind = "TEMP TABLE" if table else "VIEW"
    con.execute(f"CREATE OR REPLACE {kind} selected AS {_with_stake(' AND '.join(where))}")


def _with_stake(where: str) -> str:
    """The findings `where` keeps, with `stake_cents`: each one's part of the
    money at stake, each cent once (auditor.stake) — 0 when it is closed,
    justified or a false positive; and of the rules of one same-loss group,
    per carnet and séance, only the larger kind of money counts (a lost
    ticket is both EC661-01 and EC83-01: its money once). Sums of
    `stake_cents` over carnets, séances, tables or months count a lost
    ticket once within a carnet (not an EC83-04 against the other carnet's
    EC661-01: docs/interpretations.md); `impact_cents` stays each finding's own."""
    from auditor.stake import loss_kinds

    rows = [f"('{code}', '{group}', '{money}')" for code, (group, money) in sorted(loss_kinds().items())]
    losses = (f"(VALUES {', '.join(rows)}) AS l(code, _grp, _kind)" if rows
              else "(SELECT NULL::VARCHAR AS code, NULL::VARCHAR AS _grp, NULL::VARCHAR AS _kind WHERE false) AS l")
    return f"""
        WITH f AS (
            SELECT *, CASE WHEN {_AT_STAKE} THEN greatest(impact_cents, 0) ELSE 0 END AS _cents
            FROM findings WHERE {where}),
        g AS (SELECT f.*, l._grp, l._kind FROM f LEFT JOIN {losses} USING (code)),
        k AS (SELECT *, sum(_cents) OVER (PARTITION BY carnet_id, seance, _grp, _kind) AS _kind_sum FROM g),
        b AS (SELECT *, max(_kind_sum) OVER (PARTITION BY carnet_id, seance, _grp) AS _top FROM k),
        w AS (SELECT *, min(CASE WHEN _kind_sum = _top THEN _kind END)
                        OVER (PARTITION BY carnet_id, seance, _grp) AS _winner FROM b)
        SELECT * EXCLUDE (_cents, _grp, _kind, _kind_sum, _top, _winner),
               CAST(CASE WHEN _grp IS NULL OR _kind = _winner THEN _cents ELSE 0 END AS BIGINT) AS stake_cents
        FROM w"""


def answer(folder: Path, lang: str = "fr", since: str | None = None, sql: str | None = None,
           view: str | None = None, severities: tuple[str, ...] | None = None,
           older_than: int | None = None) -> str:
    """The text `ecarte-audit history` prints."""
    import duckdb

    from auditor.i18n import cli_label, format_day

    if since is not None:
        import datetime as dt

        try:
            dt.date.fromisoformat(since)
        except ValueError:
            raise UsageError("history.not_a_date", since=since) from None
    if older_than is not None and older_than < 0:
        raise UsageError("history.bad_days", days=older_than)
    for attempt in (1, 2):
        con = connect(folder)
        try:
            # The summary asks three questions of the findings: computed once for them.
            select(con, severities, older_than, table=sql is None and view is None)
            if sql is not None:
                try:
                    rel = con.execute(sql)
                    if rel is None or rel.description is None:
                        # An empty statement, or one that answers nothing (CREATE, SET…).
                        raise UsageError("history.sql_no_result")
                    return format_table([d[0] for d in rel.description], rel.fetchall(), lang)
                except duckdb.IOException:
                    raise
                except duckdb.Error as exc:
                    raise UsageError("history.sql_error", reason=str(exc).splitlines()[0]) from None
            if view is not None:
                rel = con.execute(_view_query(view, severities, older_than))
                return format_table([d[0] for d in rel.description], rel.fetchall(), lang)
            parts = []
            for name in ("money", "codes", "open"):
                params = {"since": since, "today": today()} if name == "open" else None
                rel = con.execute(QUERIES[name], params)
                title = (cli_label("history.title_open_since", lang, since=format_day(since, lang))
                         if name == "open" and since else cli_label(TITLES[name], lang))
                rows = rel.fetchall()
                body = (format_table([d[0] for d in rel.description], rows, lang) if rows
                        else cli_label("history.none", lang) + "\n")
                parts.append(f"## {title}\n\n{body}")
            return "\n".join(parts)
        except duckdb.IOException:
            # Another run folded the history while this one read it: read it again, once.
            if attempt == 2:
                raise UsageError("history.busy", folder=folder) from None
        except duckdb.Error as exc:
            raise UsageError("history.unreadable", folder=folder, reason=str(exc).splitlines()[0]) from None
        finally:
            con.close()
    raise AssertionError("unreachable")


def _view_query(view: str, severities, older_than) -> str:
    """One view, as --view prints it: the findings and observations as --severity and --older-than keep them."""
    if view == "findings":
        # The view's own columns (docs/history.md); `stake_cents` is the summary's, for --sql.
        return ("SELECT * EXCLUDE (stake_cents) FROM selected "
                "ORDER BY seance_date NULLS LAST, casino, table_no, seance, coup, code")
    where = ["true"]
    if view in ("observations", "seances") and older_than is not None:
        where.append(f"seance_date <= CAST('{today()}' AS DATE) - INTERVAL {int(older_than)} DAY")
    if view == "observations" and severities:
        where.append("severity IN (" + ", ".join(f"'{s}'" for s in severities) + ")")
    order = {"observations": "run_at, carnet_id, seance, coup, code", "runs": "run_at, run_id",
             "carnets": "casino, table_no, period_start, carnet_id",
             "seances": "casino, table_no, seance_date, carnet_id, seance"}[view]
    return f"SELECT * FROM {view} WHERE {' AND '.join(where)} ORDER BY {order}"


def format_table(columns: list[str], rows: list[tuple], lang: str) -> str:
    """Plain aligned text; columns in cents are shown as money. Built column by
    column: an open list of tens of thousands of findings prints at once."""
    from auditor.money import format_cents

    shown, padded = [], []
    for i, col in enumerate(columns):
        values = [r[i] for r in rows]
        money = col.endswith("_cents")
        texts = [("" if v is None else format_cents(v, lang) if money and isinstance(v, int) else str(v))
                 for v in values]
        head = col[:-6] if money else col
        width = max([len(head), *map(len, texts)])
        numeric = bool(rows) and all(v is None or isinstance(v, (int, float)) for v in values)
        shown.append((head, width, numeric))
        padded.append([t.rjust(width) if numeric else t.ljust(width) for t in texts])
    head = "  ".join(h.rjust(w) if num else h.ljust(w) for h, w, num in shown).rstrip()
    rule = "  ".join("-" * w for _, w, _ in shown).rstrip()
    body = ["  ".join(cells).rstrip() for cells in zip(*padded)] if padded else []
    return "\n".join([head, rule, *body]) + "\n"


def trends(folder: Path, lang: str) -> list[dict]:
    """Per table: money at stake per month of séance, as a small inline SVG bar chart."""
    import duckdb
    from markupsafe import Markup

    from auditor.money import format_cents

    try:
        con = connect(folder)
        select(con)
        rows = con.execute("SELECT * FROM (" + QUERIES["money"] + ")").fetchall()
        con.close()
    except (duckdb.Error, UsageError):
        return []   # a damaged ledger: the index goes without its trends (`history` names the problem)
    by_table: dict[tuple, list] = {}
    for casino, table_no, month, _n, cents in rows:
        if month is not None:
            by_table.setdefault((casino, table_no), []).append((month, int(cents)))
    out = []
    for (casino, table_no), months in sorted(by_table.items(), key=lambda kv: (str(kv[0][0]), kv[0][1] or 0)):
        months = months[-12:]
        top = max(c for _, c in months) or 1
        w, h, bar = 12 * 14, 48, 10
        bars = []
        for i, (month, cents) in enumerate(months):
            height = max(1, round(cents * (h - 2) / top))
            tip = f"{month} : {format_cents(cents, lang)}" if lang == "fr" else f"{month}: {format_cents(cents, lang)}"
            bars.append(f'<rect x="{i * 14 + 2}" y="{h - height}" width="{bar}" height="{height}">'
                        f'<title>{Markup.escape(tip)}</title></rect>')
        label = f"{casino or ''} — table {'' if table_no is None else table_no}".strip()
        svg = (f'<svg class="trend-chart" role="img" aria-label="{Markup.escape(label)}" width="{w}" height="{h}" '
               f'viewBox="0 0 {w} {h}" xmlns="http://www.w3.org/2000/svg">{"".join(bars)}</svg>')
        out.append({"key": f"{casino}|{table_no}", "label": label, "svg": Markup(svg)})
    return out
