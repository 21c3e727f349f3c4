"""Indicators per table and month, from the history ledger (outputs.md v1.2
"Indicators"): what a controller reads in a minute.

Per casino, table and month of séance: findings by severity and by rule,
money at stake (open findings only), open findings by age (from the
séance's day), the séances' totals (coups, winning mass, levy recorded, the
effective levy rate against the regulation's, cagnotte against the tickets'
face value), the codes that recur (3 days or more in a month) and the
findings across the carnets of the table. Each table-month is set against a
band drawn from the casino's other tables the same month (or, when they are
too few, from the table's own earlier months): outside it, the table-month
is "à examiner" — a flag, never a finding, no money.

`write_indicators` writes `OUT/index.html` (offline, charts as inline SVG
drawn here) and/or `OUT/indicators.csv`.
"""

from __future__ import annotations

import csv
import io
import statistics
from dataclasses import dataclass, field
from decimal import ROUND_HALF_EVEN, Decimal
from pathlib import Path

from markupsafe import Markup, escape

from auditor.errors import UsageError
from auditor.report.page import Page

FORMATS = ("html", "csv")

# The band: median ± K × 1.4826 × MAD (the median absolute deviation scaled to
# a standard deviation), at least ± MIN_REL of the median; from the casino's
# other tables the same month when there are MIN_PEERS, else from the table's
# own earlier months when there are MIN_OWN.
K = Decimal(3)
MAD_SCALE = Decimal("1.4826")
MIN_REL = Decimal("0.25")
MIN_PEERS = 3
MIN_OWN = 3
RATE_PLACES = Decimal("0.0001")
AGES = (30, 90)       # open findings at least this many days old (from the séance's day)
RECURRING_DAYS = 3    # a code on this many days of one month at one table recurs

INDICATORS = ("findings_error", "findings_warning", "findings_info", "impact_cents", "open_findings",
              "open_30_days", "open_90_days", "seances", "coups", "winning_mass_cents", "levy_recorded_cents",
              "levy_rate", "cagnotte_vs_tickets_cents", "archive_findings")
BANDED = ("seances", "coups", "winning_mass_cents", "levy_recorded_cents", "levy_rate", "cagnotte_vs_tickets_cents")
CSV_COLUMNS = ("casino", "table_no", "month", "indicator", "value", "band_low", "band_high", "flagged")


def parse_formats(text: str | None) -> tuple[str, ...]:
    """`--format html,csv` (default html)."""
    if text is None:
        return ("html",)
    chosen = tuple(dict.fromkeys(p.strip().lower() for p in text.split(",") if p.strip()))
    if not chosen or any(f not in FORMATS for f in chosen):
        raise UsageError("history.bad_format", formats=text, choices=", ".join(FORMATS))
    return chosen


@dataclass
class Cell:
    """One indicator of one table-month: its value, its band and whether it lies outside."""

    value: int | Decimal | None
    low: int | Decimal | None = None
    high: int | Decimal | None = None
    basis: str | None = None       # "peers" or "own": where the band comes from
    flagged: bool = False


@dataclass
class Table:
    """One table of one casino: its months, each with its indicators."""

    casino: str
    table_no: int
    months: dict[str, dict[str, Cell]] = field(default_factory=dict)
    codes: dict[str, dict[str, int]] = field(default_factory=dict)        # month → code → findings
    recurring: list[dict] = field(default_factory=list)                   # month, code, days, carnets
    archive: list[dict] = field(default_factory=list)                     # seance_date, code, message, carnet
    ages: dict[str, int] = field(default_factory=dict)                    # open findings by age bucket


@dataclass
class Indicators:
    """Everything the page and the CSV show."""

    tables: list[Table]
    runs: int
    first_run: str | None
    last_run: str | None
    today: str
    levy_rate: Decimal


# -- computing -------------------------------------------------------------------------

SEANCES = """
    WITH kept AS (
        -- One row per séance of a table: a carnet renamed or copied counts once (its latest audit).
        SELECT * FROM (SELECT *, row_number() OVER (PARTITION BY casino, table_no, seance_date, seance
                                                     ORDER BY last_audited_at DESC, carnet_id) AS n FROM seances)
        WHERE n = 1 AND seance_date IS NOT NULL AND table_no IS NOT NULL)
    SELECT coalesce(casino, '') AS casino, table_no, strftime(seance_date, '%Y-%m') AS month, count(*) AS seances,
           CAST(sum(coups) AS BIGINT), CAST(sum(winning_mass_cents) AS BIGINT),
           CAST(sum(levy_recorded_cents) AS BIGINT),
           CAST(sum(cagnotte_cents - tickets_face_cents) FILTER (WHERE cagnotte_cents IS NOT NULL) AS BIGINT)
    FROM kept GROUP BY ALL"""

FINDINGS = """
    SELECT coalesce(casino, '') AS casino, table_no, strftime(seance_date, '%Y-%m') AS month,
           count(*) FILTER (WHERE severity = 'error'), count(*) FILTER (WHERE severity = 'warning'),
           count(*) FILTER (WHERE severity = 'info'),
           CAST(coalesce(sum(stake_cents), 0) AS BIGINT),
           count(*) FILTER (WHERE open),
           count(*) FILTER (WHERE open AND date_diff('day', seance_date, CAST($today AS DATE)) >= {a30}),
           count(*) FILTER (WHERE open AND date_diff('day', seance_date, CAST($today AS DATE)) >= {a90}),
           count(*) FILTER (WHERE code IN ({archive}))
    FROM selected WHERE seance_date IS NOT NULL AND table_no IS NOT NULL GROUP BY ALL"""

CODES = """
    SELECT coalesce(casino, '') AS casino, table_no, strftime(seance_date, '%Y-%m') AS month, code, count(*)
    FROM selected WHERE seance_date IS NOT NULL AND table_no IS NOT NULL GROUP BY ALL ORDER BY ALL"""

RECURRING = """
    SELECT coalesce(casino, '') AS casino, table_no, strftime(seance_date, '%Y-%m') AS month, code,
           count(DISTINCT seance_date) AS days, count(*) AS findings, list(DISTINCT carnet_id ORDER BY carnet_id)
    FROM selected WHERE seance_date IS NOT NULL AND table_no IS NOT NULL
    GROUP BY ALL HAVING count(DISTINCT seance_date) >= {days} ORDER BY ALL"""

ARCHIVE = """
    SELECT coalesce(casino, '') AS casino, table_no, seance_date, code, message, carnet_id, open
    FROM selected WHERE code IN ({archive}) AND table_no IS NOT NULL ORDER BY ALL"""


def _codes_sql(codes) -> str:
    return ", ".join("'" + c.replace("'", "''") + "'" for c in codes) or "NULL"


def compute(folder: Path, archive: tuple[str, ...] | None = None) -> Indicators:
    """The indicators of the history in `folder`. `archive`: the codes of
    the rules across a table's carnets, when the caller knows them (an
    audit's run does, from its checks); else asked of the checks, which
    imports them (and pandas)."""
    from auditor import history
    from auditor.catalogue import load_profile

    if archive is None:
        from auditor.checks.archive import archive_codes

        archive = archive_codes()

    con = history.connect(folder)
    history.select(con, table=True)
    today = history.today()
    archive = _codes_sql(archive)
    tables: dict[tuple[str, int], Table] = {}

    def table(casino: str, table_no: int) -> Table:
        return tables.setdefault((casino, table_no), Table(casino, table_no))

    def month(casino, table_no, m) -> dict[str, Cell]:
        return table(casino, table_no).months.setdefault(m, {k: Cell(None) for k in INDICATORS})

    for casino, table_no, m, seances, coups, mass, levy, cagnotte in con.execute(SEANCES).fetchall():
        cells = month(casino, table_no, m)
        cells["seances"].value, cells["coups"].value = seances, coups
        cells["winning_mass_cents"].value, cells["levy_recorded_cents"].value = mass, levy
        cells["levy_rate"].value = (Decimal(levy) / Decimal(mass)).quantize(RATE_PLACES, ROUND_HALF_EVEN) \
            if mass else None
        cells["cagnotte_vs_tickets_cents"].value = cagnotte
    query = FINDINGS.format(a30=AGES[0], a90=AGES[1], archive=archive)
    for casino, table_no, m, err, warn, info, impact, opened, a30, a90, arch in con.execute(
            query, {"today": today}).fetchall():
        cells = month(casino, table_no, m)
        for key, v in (("findings_error", err), ("findings_warning", warn), ("findings_info", info),
                       ("impact_cents", impact), ("open_findings", opened), ("open_30_days", a30),
                       ("open_90_days", a90), ("archive_findings", arch)):
            cells[key].value = v
    # A month with séances but no finding has none of them, not an unknown number.
    for t in tables.values():
        for cells in t.months.values():
            for key in ("findings_error", "findings_warning", "findings_info", "impact_cents", "open_findings",
                        "open_30_days", "open_90_days", "archive_findings"):
                if cells[key].value is None:
                    cells[key].value = 0
    for casino, table_no, m, code, n in con.execute(CODES).fetchall():
        table(casino, table_no).codes.setdefault(m, {})[code] = n
    for casino, table_no, m, code, days, n, carnets in con.execute(RECURRING.format(days=RECURRING_DAYS)).fetchall():
        table(casino, table_no).recurring.append({"month": m, "code": code, "days": days, "findings": n,
                                                  "carnets": list(carnets)})
    for casino, table_no, day, code, message, carnet, opened in con.execute(ARCHIVE.format(archive=archive)).fetchall():
        table(casino, table_no).archive.append({"day": day.isoformat() if day else None, "code": code,
                                                "message": message, "carnet": carnet, "open": opened})
    for t in tables.values():
        cells = t.months.values()
        t.ages = {"open": sum(c["open_findings"].value or 0 for c in cells),
                  "30": sum(c["open_30_days"].value or 0 for c in cells),
                  "90": sum(c["open_90_days"].value or 0 for c in cells)}
    runs, first, last = con.execute("SELECT count(*), strftime(min(run_at), '%Y-%m-%dT%H:%M:%SZ'), "
                                    "strftime(max(run_at), '%Y-%m-%dT%H:%M:%SZ') FROM runs").fetchone()
    con.close()
    ordered = [tables[k] for k in sorted(tables, key=lambda k: (k[0], k[1]))]
    for t in ordered:
        t.months = dict(sorted(t.months.items()))
    bands(ordered)
    rate = Decimal(load_profile().as_json()["levy_rate"])
    return Indicators(ordered, runs, first, last, today, rate)


def band_of(values: list) -> tuple[Decimal, Decimal]:
    """median ± max(K × 1.4826 × MAD, MIN_REL × |median|), exact (Decimal)."""
    vals = [Decimal(v) for v in values]
    med = statistics.median(vals)
    mad = statistics.median([abs(v - med) for v in vals])
    half = max(K * MAD_SCALE * mad, MIN_REL * abs(med))
    return med - half, med + half


def _shown(indicator: str, v: Decimal):
    """A band's end as the indicator counts: whole cents or units, a rate to four places."""
    if indicator == "levy_rate":
        return v.quantize(RATE_PLACES, ROUND_HALF_EVEN)
    return int(v.to_integral_value(ROUND_HALF_EVEN))


def bands(tables: list[Table]) -> None:
    """Each banded indicator of each table-month against its band: the
    casino's other tables that month, or the table's own earlier months."""
    for indicator in BANDED:
        by_month: dict[tuple[str, str], dict[int, object]] = {}
        for t in tables:
            for m, cells in t.months.items():
                if cells[indicator].value is not None:
                    by_month.setdefault((t.casino, m), {})[t.table_no] = cells[indicator].value
        for t in tables:
            earlier: list = []
            for m, cells in t.months.items():
                cell = cells[indicator]
                if cell.value is None:
                    continue
                peers = [v for no, v in by_month.get((t.casino, m), {}).items() if no != t.table_no]
                if len(peers) >= MIN_PEERS:
                    basis, sample = "peers", peers
                elif len(earlier) >= MIN_OWN:
                    basis, sample = "own", earlier
                else:
                    basis, sample = None, None
                if sample is not None:
                    low, high = band_of(sample)
                    cell.low, cell.high, cell.basis = _shown(indicator, low), _shown(indicator, high), basis
                    cell.flagged = not (low <= Decimal(cell.value) <= high)
                earlier.append(cell.value)


def flagged(ind: Indicators) -> list[tuple[Table, str, str, Cell]]:
    """Every table-month indicator outside its band."""
    return [(t, m, k, c) for t in ind.tables for m, cells in t.months.items() for k, c in cells.items() if c.flagged]


# -- the CSV -------------------------------------------------------------------------

def _number(v, lang: str) -> str:
    if v is None:
        return ""
    text = str(v)
    return text.replace(".", ",") if lang == "fr" and isinstance(v, Decimal) else text


def to_csv(ind: Indicators, lang: str) -> str:
    """indicators.csv: one row per casino, table, month and indicator (French: `;` and the decimal comma)."""
    out = io.StringIO()
    writer = csv.writer(out, delimiter=";" if lang == "fr" else ",", lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for t in ind.tables:
        for m, cells in t.months.items():
            for key in INDICATORS:
                c = cells[key]
                writer.writerow([t.casino, t.table_no, m, key, _number(c.value, lang), _number(c.low, lang),
                                 _number(c.high, lang), "true" if c.flagged else "false"])
    return out.getvalue()


# -- the page ------------------------------------------------------------------------

def write_indicators(folder: Path, out: Path, lang: str, formats: tuple[str, ...] = ("html",),
                     reports: Path | None = None, generated_at: str | None = None,
                     archive: tuple[str, ...] | None = None) -> list[Path]:
    """Write OUT/index.html and/or OUT/indicators.csv; the paths written.
    `reports`: an audit's output folder whose carnets' reports the page links
    to; `archive`: the rules across a table's carnets, if known (`compute`)."""
    import duckdb

    from auditor.atomic import write_atomic
    from auditor.errors import os_reason

    try:
        ind = compute(folder, archive)
    except duckdb.Error as exc:
        raise UsageError("history.unreadable", folder=folder, reason=str(exc).splitlines()[0]) from None
    written = []
    try:
        out.mkdir(parents=True, exist_ok=True)
        if "csv" in formats:
            write_atomic(out / "indicators.csv", to_csv(ind, lang))
            written.append(out / "indicators.csv")
        if "html" in formats:
            write_atomic(out / "index.html", render_page(ind, lang, out, reports, generated_at))
            written.append(out / "index.html")
    except OSError as exc:
        raise UsageError("main.cannot_write", path=out, reason=os_reason(exc)) from None
    return written


def render_page(ind: Indicators, lang: str, out: Path, reports: Path | None, generated_at: str | None) -> str:
    """The dashboard, offline: one self-contained HTML file."""
    import os

    from auditor import __version__
    from auditor.clock import generated_at as clock
    from auditor.i18n import labels
    from auditor.report import html_report
    from auditor.report.page import js_labels, moment_text

    lab = labels(lang)
    stamp = generated_at or clock()

    def link(carnet: str) -> str | None:
        if reports is None or not (reports / carnet / "report.html").is_file():
            return None
        return Path(os.path.relpath(reports / carnet / "report.html", out)).as_posix()

    view = DashboardView(lang=lang, t=lab, js_labels=js_labels(lab), tool_version=__version__, generated_at=stamp,
                         generated_text=moment_text(stamp, lang),
                         body=Markup(_body(ind, lang, lab, link)))
    return html_report.render("indicators.html.j2", view)


@dataclass
class DashboardView(Page):
    """What indicators.html.j2 shows: the body, made here."""

    body: Markup = Markup("")


def _fmt(indicator: str, v, lang: str) -> str:
    from auditor.money import format_cents

    if v is None:
        return "—"
    if indicator == "levy_rate":
        pct = (Decimal(v) * 100).quantize(Decimal("0.01"), ROUND_HALF_EVEN)
        text = f"{pct} %" if lang == "fr" else f"{pct}%"
        return text.replace(".", ",") if lang == "fr" else text
    if indicator.endswith("_cents"):
        return format_cents(int(v), lang)
    return str(v)


def _day(text: str | None, lang: str) -> str:
    from auditor.i18n import format_day

    return format_day(text, lang) if text else "—"


def _body(ind: Indicators, lang: str, lab: dict, link) -> str:
    e = escape
    flags = flagged(ind)
    intro = lab["ind_intro"].format(runs=ind.runs, first=_moment(ind.first_run, lang),
                                    last=_moment(ind.last_run, lang), today=_day(ind.today, lang))
    months = len({(t.casino, t.table_no, m) for t, m, _, _ in flags})
    parts = [f'<header class="first-screen"><h1>{e(lab["ind_title"])}</h1>',
             f'<p class="note">{e(intro)}</p>',
             '<div class="cards">',
             f'<div class="card"><div class="n" id="n-tables">{len(ind.tables)}</div>{e(lab["ind_tables"])}</div>',
             f'<div class="card{" warning" if flags else ""}"><div class="n" id="n-flagged">{months}</div>'
             f'{e(lab["ind_flagged_months"])}</div>',
             "</div></header>"]
    # What asks for a look, first.
    parts.append(f'<section id="review" aria-labelledby="h-review"><h2 id="h-review">{e(lab["ind_review_title"])}</h2>')
    parts.append(f'<p class="note">{e(lab["ind_review_note"])}</p>')
    if flags:
        parts.append(f'<table id="flags"><thead><tr><th scope="col">{e(lab["casino"])}</th><th scope="col">{e(lab["table"])}</th>'
                     f'<th scope="col">{e(lab["ind_month"])}</th><th scope="col">{e(lab["ind_indicator"])}</th>'
                     f'<th scope="col">{e(lab["ind_value"])}</th><th scope="col">{e(lab["ind_band"])}</th>'
                     f'<th scope="col">{e(lab["ind_basis"])}</th></tr></thead><tbody>')
        for t, m, k, c in flags:
            parts.append(f'<tr class="flag" data-casino="{e(t.casino)}" data-table="{t.table_no}" data-month="{m}" '
                         f'data-indicator="{k}"><td>{e(t.casino)}</td><td class="num">{t.table_no}</td><td>{m}</td>'
                         f'<td>{e(lab["ind_" + k])}</td><td class="num">{e(_fmt(k, c.value, lang))}</td>'
                         f'<td class="num">{e(_fmt(k, c.low, lang))} … {e(_fmt(k, c.high, lang))}</td>'
                         f'<td>{e(lab["ind_basis_" + c.basis])}</td></tr>')
        parts.append("</tbody></table>")
    else:
        parts.append(f'<p id="no-flags">{e(lab["ind_no_flags"])}</p>')
    method = lab["ind_method"].format(k=K, scale=MAD_SCALE, rel=int(MIN_REL * 100), peers=MIN_PEERS, own=MIN_OWN)
    parts.append(f'<h3>{e(lab["ind_method_title"])}</h3><p class="note" id="method">{e(method)}</p>')
    parts.append("</section>")
    for t in ind.tables:
        parts.append(_table_section(t, ind, lang, lab, link))
    return "\n".join(parts)


def _moment(stamp: str | None, lang: str) -> str:
    from auditor.report.page import moment_text

    return moment_text(stamp, lang) if stamp else "—"


def _table_section(t: Table, ind: Indicators, lang: str, lab: dict, link) -> str:
    e = escape
    key = f"{t.casino}|{t.table_no}"
    months = list(t.months)
    title = lab["ind_table_title"].format(casino=t.casino or "?", table=t.table_no)
    out = [f'<section class="ind-table" data-table="{e(key)}" aria-label="{e(title)}"><h2>{e(title)}</h2>']

    def figure(indicator_key: str, svg: str, words: str) -> None:
        out.append(f'<figure class="ind" data-chart="{indicator_key}"><figcaption>{e(lab["ind_chart_" + indicator_key])}'
                   f'</figcaption>{svg}<p class="note words">{e(words)}</p></figure>')

    def name(chart: str) -> str:   # the picture's name for a screen reader
        return f"{title} — {lab['ind_chart_' + chart]}"

    figure("findings", _stacked(t, months, lang, lab, name("findings")), lab["ind_words_findings"])
    figure("impact", _bars(t, months, "impact_cents", lang, name("impact")), lab["ind_words_impact"])
    figure("ages", _ages(t, lab, name("ages")), lab["ind_words_ages"].format(a=AGES[0], b=AGES[1]))
    figure("mass", _bars(t, months, "winning_mass_cents", lang, name("mass")), lab["ind_words_mass"])
    figure("levy_rate", _bars(t, months, "levy_rate", lang, name("levy_rate"), ref=ind.levy_rate),
           lab["ind_words_levy_rate"].format(rate=_fmt("levy_rate", ind.levy_rate, lang)))
    figure("cagnotte", _bars(t, months, "cagnotte_vs_tickets_cents", lang, name("cagnotte")),
           lab["ind_words_cagnotte"])
    figure("archive", _timeline(t, months, lang, name("archive"))
           or f'<p class="note">{e(lab["ind_no_archive"])}</p>', lab["ind_words_archive"])
    # The codes per month, and those that recur.
    codes = sorted({c for m in t.codes.values() for c in m})
    if codes:
        out.append(f'<h3>{e(lab["ind_codes_title"])}</h3><table class="codes"><thead><tr><th scope="col">{e(lab["ind_code"])}</th>'
                   + "".join(f'<th scope="col">{m}</th>' for m in months) + "</tr></thead><tbody>")
        for c in codes:
            out.append(f"<tr><th scope=\"row\">{e(c)}</th>" + "".join(
                f'<td class="num">{t.codes.get(m, {}).get(c, "")}</td>' for m in months) + "</tr>")
        out.append("</tbody></table>")
    out.append(f'<h3>{e(lab["ind_recurring_title"])}</h3>')
    if t.recurring:
        out.append('<ul class="recurring">')
        for r in t.recurring:
            carnets = ", ".join(
                (f'<a href="{e(href)}">{e(c)}</a>' if (href := link(c)) else f"<code>{e(c)}</code>") for c in r["carnets"])
            out.append(f'<li data-month="{r["month"]}" data-code="{e(r["code"])}">'
                       f'{e(lab["ind_recurring_item"].format(month=r["month"], code=r["code"], days=r["days"], n=r["findings"]))} {carnets}</li>')
        out.append("</ul>")
    else:
        out.append(f'<p class="note">{e(lab["ind_recurring_none"].format(days=RECURRING_DAYS))}</p>')
    # Every figure in a table (what the charts draw, to read or copy).
    out.append(f'<details><summary>{e(lab["ind_figures"])}</summary><table class="figures"><thead><tr><th scope="col">{e(lab["ind_indicator"])}</th>'
               + "".join(f'<th scope="col">{m}</th>' for m in months) + "</tr></thead><tbody>")
    for k in INDICATORS:
        out.append(f'<tr><th scope="row">{e(lab["ind_" + k])}</th>' + "".join(
            f'<td class="num{" flagged" if t.months[m][k].flagged else ""}" data-casino="{e(t.casino)}" '
            f'data-table="{t.table_no}" data-month="{m}" data-indicator="{k}" '
            f'data-value="{"" if t.months[m][k].value is None else t.months[m][k].value}" '
            f'data-flagged="{"true" if t.months[m][k].flagged else "false"}">{e(_fmt(k, t.months[m][k].value, lang))}</td>'
            for m in months) + "</tr>")
    out.append("</tbody></table></details></section>")
    return "\n".join(out)


# -- charts (inline SVG, drawn here) ----------------------------------------------------

W, H, LEFT, BOTTOM, TOP = 640, 150, 90, 22, 10


def _svg(label: str, body: list[str], height: int = H) -> str:
    return (f'<svg class="chart" role="img" aria-label="{escape(label)}" width="{W}" height="{height}" '
            f'viewBox="0 0 {W} {height}" xmlns="http://www.w3.org/2000/svg">{"".join(body)}</svg>')


def _axis(months: list[str], lo: Decimal, hi: Decimal, indicator: str, lang: str, height: int = H):
    """The y scale (value → y) and the axis' marks."""
    from auditor.report.charts import _n

    span = (hi - lo) or Decimal(1)
    plot = height - BOTTOM - TOP

    def y(v) -> float:
        return float(TOP + plot - plot * (Decimal(v) - lo) / span)

    body = [f'<line class="grid" x1="{LEFT}" y1="{_n(y(v))}" x2="{W - 4}" y2="{_n(y(v))}"/>'
            f'<text class="axis" x="{LEFT - 4}" y="{_n(y(v) + 4)}" text-anchor="end">{escape(_fmt(indicator, v, lang))}</text>'
            for v in dict.fromkeys((lo, hi))]   # all zero: one line, not two labels on each other
    if lo < 0 < hi:
        body.append(f'<line class="zero" x1="{LEFT}" y1="{_n(y(0))}" x2="{W - 4}" y2="{_n(y(0))}"/>')
    slot = (W - LEFT - 4) / max(len(months), 1)
    for i, m in enumerate(months):
        body.append(f'<text class="axis" x="{_n(LEFT + slot * (i + 0.5))}" y="{height - 6}" text-anchor="middle">{m}</text>')
    return y, slot, body


def _bars(t: Table, months: list[str], indicator: str, lang: str, label: str, ref: Decimal | None = None) -> str:
    """One bar per month, the band as a shaded box behind it, a flagged month in colour."""
    from auditor.report.charts import _n

    cells = [t.months[m][indicator] for m in months]
    values = [Decimal(c.value) for c in cells if c.value is not None]
    ends = values + [Decimal(c.low) for c in cells if c.low is not None] + \
        [Decimal(c.high) for c in cells if c.high is not None] + ([ref] if ref is not None else [])
    if not values:
        return f'<p class="note">{escape("—")}</p>'
    lo, hi = min([Decimal(0), *ends]), max([Decimal(0), *ends])
    y, slot, body = _axis(months, lo, hi, indicator, lang)
    for i, (m, c) in enumerate(zip(months, cells)):
        x = LEFT + slot * i + slot * 0.2
        w = slot * 0.6
        if c.low is not None:
            body.append(f'<rect class="band" x="{_n(LEFT + slot * i + slot * 0.1)}" y="{_n(y(c.high))}" '
                        f'width="{_n(slot * 0.8)}" height="{_n(max(y(c.low) - y(c.high), 1))}"/>')
        if c.value is None:
            continue
        top, bottom = sorted((y(c.value), y(0)))
        tip = f"{m} : {_fmt(indicator, c.value, lang)}" if lang == "fr" else f"{m}: {_fmt(indicator, c.value, lang)}"
        body.append(f'<rect class="bar{" flagged" if c.flagged else ""}" data-month="{m}" x="{_n(x)}" y="{_n(top)}" '
                    f'width="{_n(w)}" height="{_n(max(bottom - top, 1))}"><title>{escape(tip)}</title></rect>')
    if ref is not None:
        body.append(f'<line class="ref" x1="{LEFT}" y1="{_n(y(ref))}" x2="{W - 4}" y2="{_n(y(ref))}"/>')
    return _svg(label, body)


def _stacked(t: Table, months: list[str], lang: str, lab: dict, label: str) -> str:
    """Findings per month, by severity, stacked."""
    from auditor.report.charts import _n

    keys = ("findings_error", "findings_warning", "findings_info")
    totals = [sum(t.months[m][k].value or 0 for k in keys) for m in months]
    if not any(totals):
        return f'<p class="note">{escape(lab["ind_no_findings"])}</p>'
    y, slot, body = _axis(months, Decimal(0), Decimal(max(totals)), "findings", lang)
    for i, m in enumerate(months):
        base = 0
        for k, cls in zip(keys, ("error", "warning", "info")):
            n = t.months[m][k].value or 0
            if not n:
                continue
            top, bottom = y(base + n), y(base)
            tip = f"{m} — {lab['ind_' + k]} : {n}"
            body.append(f'<rect class="{cls}" x="{_n(LEFT + slot * i + slot * 0.2)}" y="{_n(top)}" '
                        f'width="{_n(slot * 0.6)}" height="{_n(max(bottom - top, 1))}">'
                        f'<title>{escape(tip)}</title></rect>')
            base += n
    return _svg(label, body)


def _ages(t: Table, lab: dict, label: str) -> str:
    """The table's open findings, by age from the séance's day."""
    from auditor.report.charts import _n

    n_all, n30, n90 = t.ages.get("open", 0), t.ages.get("30", 0), t.ages.get("90", 0)
    groups = [(lab["ind_age_recent"].format(a=AGES[0]), n_all - n30),
              (lab["ind_age_mid"].format(a=AGES[0], b=AGES[1]), n30 - n90),
              (lab["ind_age_old"].format(b=AGES[1]), n90)]
    top = max(n for _, n in groups) or 1
    body, row = [], 20
    for i, (name, n) in enumerate(groups):
        w = (W - LEFT - 60) * n / top
        body.append(f'<text class="axis" x="{LEFT - 4}" y="{i * row + 14}" text-anchor="end">{escape(name)}</text>'
                    f'<rect class="age{i}" x="{LEFT}" y="{i * row + 4}" width="{_n(max(w, 1 if n else 0))}" height="13">'
                    f'<title>{escape(f"{name} : {n}")}</title></rect>'
                    f'<text x="{_n(LEFT + w + 4)}" y="{i * row + 14}">{n}</text>')
    return _svg(label, body, height=3 * row + 6)


def _timeline(t: Table, months: list[str], lang: str, label: str) -> str:
    """The table's months as a line; each finding across its carnets a mark on its day."""
    from auditor.report.charts import _n

    if not t.archive:
        return ""
    height = 46
    slot = (W - LEFT - 4) / max(len(months), 1)
    body = [f'<line class="grid" x1="{LEFT}" y1="20" x2="{W - 4}" y2="20"/>']
    for i, m in enumerate(months):
        body.append(f'<text class="axis" x="{_n(LEFT + slot * (i + 0.5))}" y="{height - 4}" text-anchor="middle">{m}</text>'
                    f'<line class="grid" x1="{_n(LEFT + slot * i)}" y1="14" x2="{_n(LEFT + slot * i)}" y2="26"/>')
    for a in t.archive:
        if not a["day"] or a["day"][:7] not in months:
            continue
        i = months.index(a["day"][:7])
        x = LEFT + slot * (i + (int(a["day"][8:10]) - 0.5) / 31)
        tip = f'{_day(a["day"], lang)} — {a["code"]} — {a["message"] or ""}'
        body.append(f'<circle class="archive{"" if a["open"] else " closed"}" data-code="{escape(a["code"])}" '
                    f'cx="{_n(x)}" cy="20" r="5"><title>{escape(tip)}</title></circle>')
    return _svg(label, body, height=height)
