"""The findings history: every run appended as one Parquet file, queried with DuckDB.

One file per run (`run-<time>-<id>.parquet`), written beside under a hidden
temporary name and renamed into place: two runs writing at once never touch
each other's file, a reader sees a run whole or not at all, and a cluster
run writes it from the client. The file is one flat table, a row per
finding (a carnet without findings has one row with no fingerprint), so
Dask or Spark read the folder as it is; DuckDB's views `runs`, `carnets`
and `findings` give it back its three levels.

It holds what the carnet says and what the user typed (reviews), with the
run's time and the tool's version: nothing about the machine or the user's
session.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from auditor.errors import UsageError

PATTERN = "run-*.parquet"

RUN_COLUMNS = ("run_id", "run_at", "tool_version", "profile")
CARNET_COLUMNS = ("carnet_id", "carnet_path", "carnet_sha256", "casino", "table_no", "date_debut", "verdict",
                  "errors", "warnings", "info", "carnet_impact_cents", "levy_expected_cents",
                  "levy_recorded_cents", "seances", "coups", "mises")
FINDING_COLUMNS = ("fingerprint", "code", "severity", "seance", "seance_date", "coup", "impact_cents",
                   "baseline_state", "review_status", "review_by", "review_at")


def _schema():
    import pyarrow as pa

    text, whole, day = pa.string(), pa.int64(), pa.date32()
    types = {"run_at": pa.timestamp("s", tz="UTC"), "table_no": whole, "date_debut": day, "errors": whole,
             "warnings": whole, "info": whole, "carnet_impact_cents": whole, "levy_expected_cents": whole,
             "levy_recorded_cents": whole, "seances": whole, "coups": whole, "mises": whole, "seance": whole,
             "seance_date": day, "coup": whole, "impact_cents": whole}
    return pa.schema([(c, types.get(c, text)) for c in (*RUN_COLUMNS, *CARNET_COLUMNS, *FINDING_COLUMNS)])


def run_rows(run: dict, carnets: list[tuple[dict, list[dict]]]) -> list[dict]:
    """One row per finding (or per carnet without findings): `carnets` pairs
    each carnet's summary entry with its findings' series rows."""
    import datetime as dt

    def day(text):
        try:
            return dt.date.fromisoformat(text) if text else None
        except (TypeError, ValueError):
            return None

    rows = []
    at = dt.datetime.strptime(run["run_at"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=dt.timezone.utc)
    for entry, findings in carnets:
        s, c = entry["summary"], entry.get("carnet") or {}
        base = {**run, "run_at": at, "carnet_id": entry["id"], "carnet_path": entry["path"],
                "carnet_sha256": entry.get("sha256"), "casino": c.get("casino"), "table_no": c.get("table"),
                "date_debut": day(c.get("date_debut")), "verdict": entry.get("verdict"),
                "errors": s["errors"], "warnings": s["warnings"], "info": s["info"],
                "carnet_impact_cents": s["impact_cents"], "levy_expected_cents": s.get("levy_expected_cents"),
                "levy_recorded_cents": s.get("levy_recorded_cents"), "seances": s.get("seances"),
                "coups": s.get("coups"), "mises": s.get("mises")}
        if not findings:
            rows.append({**base, **{k: None for k in FINDING_COLUMNS}})
        for f in findings:
            rows.append({**base, **{k: f.get(k) for k in FINDING_COLUMNS}, "seance_date": day(f.get("seance_date"))})
    return rows


def append_run(folder: Path, run: dict, carnets: list[tuple[dict, list[dict]]]) -> Path:
    """Write this run's file into `folder`, atomically; return its path."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    folder.mkdir(parents=True, exist_ok=True)
    table = pa.Table.from_pylist(run_rows(run, carnets), schema=_schema())
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
    return final


def new_run_id() -> str:
    """A new run's id in the history."""
    return uuid.uuid4().hex[:12]


# -- queries --------------------------------------------------------------------

def connect(folder: Path):
    """A DuckDB connection (in memory, no server) with the views runs, carnets, findings."""
    import duckdb

    if not folder.is_dir():
        raise UsageError("history.no_folder", folder=folder)
    files = sorted(folder.glob(PATTERN))
    if not files:
        raise UsageError("history.no_run", folder=folder, pattern=PATTERN)
    con = duckdb.connect(":memory:")
    listing = ", ".join("'" + str(p).replace("'", "''") + "'" for p in files)
    con.execute(f"CREATE VIEW history AS SELECT * FROM read_parquet([{listing}], union_by_name = true)")
    con.execute(f"CREATE VIEW runs AS SELECT DISTINCT {', '.join(RUN_COLUMNS)} FROM history")
    con.execute(f"CREATE VIEW carnets AS SELECT DISTINCT {', '.join(RUN_COLUMNS[:2] + CARNET_COLUMNS)} FROM history")
    con.execute(f"CREATE VIEW findings AS SELECT {', '.join(RUN_COLUMNS[:2])}, carnet_id, casino, table_no, "
                f"{', '.join(FINDING_COLUMNS)} FROM history WHERE fingerprint IS NOT NULL")
    # Each finding once, as the latest run that saw it left it (money never
    # counted twice however many nights it was seen), with when it was first
    # seen and whether the latest run of its carnet still has it.
    con.execute("""
        CREATE VIEW finding_latest AS
        WITH ranked AS (
            SELECT *, min(run_at) OVER (PARTITION BY fingerprint) AS first_seen,
                   row_number() OVER (PARTITION BY fingerprint ORDER BY run_at DESC, run_id DESC) AS n
            FROM findings),
        last_run AS (SELECT carnet_id, max(run_at) AS run_at FROM carnets GROUP BY carnet_id)
        SELECT r.* EXCLUDE (n), (r.run_at = l.run_at) AS present
        FROM ranked r JOIN last_run l USING (carnet_id) WHERE r.n = 1""")
    return con


QUERIES = {
    "money": """
        SELECT casino, table_no, strftime(seance_date, '%Y-%m') AS month,
               count(*) AS findings, sum(greatest(impact_cents, 0)) AS impact_cents
        FROM finding_latest WHERE coalesce(review_status, '') <> 'faux_positif'
        GROUP BY ALL HAVING sum(greatest(impact_cents, 0)) > 0 ORDER BY casino, table_no, month""",
    "codes": """
        SELECT code, strftime(seance_date, '%Y-%m') AS month, count(*) AS findings
        FROM finding_latest GROUP BY ALL ORDER BY code, month""",
    "open": """
        SELECT casino, table_no, code, seance, seance_date, coup, impact_cents,
               strftime(first_seen, '%Y-%m-%d') AS first_seen, review_status, fingerprint
        FROM finding_latest
        WHERE present AND coalesce(review_status, '') NOT IN ('justifie', 'faux_positif')
          AND ($since IS NULL OR first_seen <= CAST($since AS DATE) + INTERVAL 1 DAY)
        ORDER BY first_seen, casino, table_no, seance_date, seance, coup, code""",
}

# The headings of `ecarte-audit history`, keys of the command line's label files.
TITLES = {"money": "history.title_money", "codes": "history.title_codes", "open": "history.title_open"}


def answer(folder: Path, lang: str = "fr", since: str | None = None, sql: str | None = None) -> str:
    """The text `ecarte-audit history` prints."""
    import duckdb

    from auditor.i18n import cli_label, format_day

    con = connect(folder)
    if sql is not None:
        try:
            rel = con.execute(sql)
            if rel is None or rel.description is None:
                # An empty statement, or one that answers nothing (CREATE, SET…).
                raise UsageError("history.sql_no_result")
            return format_table([d[0] for d in rel.description], rel.fetchall(), lang)
        except duckdb.Error as exc:
            raise UsageError("history.sql_error", reason=str(exc).splitlines()[0]) from None
    if since is not None:
        import datetime as dt

        try:
            dt.date.fromisoformat(since)
        except ValueError:
            raise UsageError("history.not_a_date", since=since) from None
    parts = []
    for name in ("money", "codes", "open"):
        rel = con.execute(QUERIES[name], {"since": since} if name == "open" else None)
        title = (cli_label("history.title_open_since", lang, since=format_day(since, lang))
                 if name == "open" and since else cli_label(TITLES[name], lang))
        rows = rel.fetchall()
        body = (format_table([d[0] for d in rel.description], rows, lang) if rows
                else cli_label("history.none", lang) + "\n")
        parts.append(f"## {title}\n\n{body}")
    return "\n".join(parts)


def format_table(columns: list[str], rows: list[tuple], lang: str) -> str:
    """Plain aligned text; columns in cents are shown as money."""
    from auditor.money import format_cents

    def cell(col, v):
        if v is None:
            return ""
        if col.endswith("_cents") and isinstance(v, int):
            return format_cents(v, lang)
        return str(v)

    cells = [[cell(c, v) for c, v in zip(columns, row)] for row in rows]
    shown = [c[:-6] if c.endswith("_cents") else c for c in columns]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(shown)]
    numeric = [bool(rows) and all(isinstance(r[i], (int, float)) or r[i] is None for r in rows)
               for i in range(len(columns))]

    def line(values):
        return "  ".join(v.rjust(w) if num else v.ljust(w) for v, w, num in zip(values, widths, numeric)).rstrip()

    out = [line(shown), line(["-" * w for w in widths])] + [line(r) for r in cells]
    return "\n".join(out) + "\n"


def trends(folder: Path, lang: str) -> list[dict]:
    """Per table: money at stake per month of séance, as a small inline SVG bar chart."""
    from markupsafe import Markup

    from auditor.money import format_cents

    con = connect(folder)
    rows = con.execute("SELECT * FROM (" + QUERIES["money"] + ")").fetchall()
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
