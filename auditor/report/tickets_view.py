"""The report's ticket section (art. 56-1, 66-1, 82, 83): per ticket value, the
series drawn book by book with its marks, and what the casino owes for the
tickets missing from it.

The picture reads the ticket ledger the rules share (`auditor/tickets/`):
used numbers, the stretches EC83-01 reports missing, the numbers EC82-03 reports
detached twice, the numbers EC561-01 reports outside every registered book. It
never decides anything of its own: a mark is drawn where a rule's definition
puts it, and the amounts owed are the EC83-01 impacts of the findings. Which
rule feeds which column is the catalogue's `ticket_map`.

Sizes are bounded whatever the carnet: intervals, never one shape per ticket;
consecutive books used from end to end are one condensed row; at most
MAX_DETAILED books per value are drawn in detail and at most MAX_SEGMENTS
rectangles per value, the rest summed up in a dashed row and a note.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from auditor.arrays import Columns, column
from auditor.catalogue import Profile, TicketMap, load_profile, ticket_map_code
from auditor.tickets import intervals
from auditor.tickets.intervals import merge, merge_grouped
from auditor.tickets.ledger import NA_INT, TicketLedger, ledger
from auditor.model import AuditResult
from auditor.model import Status
from auditor.money import format_cents
from auditor.report.charts import WIDTH, Bar, Chart, Label, _n
from auditor.report.drafts import TicketSection, TicketValue
from auditor.frames import cat

MAX_DETAILED = 24        # books (or out-of-register blocks) drawn one by one, per value
MAX_SEGMENTS = 400       # rectangles (used stretches and marks) drawn per value
MAX_TITLE_RANGES = 6     # number ranges listed in one tooltip
LABEL_W = 104            # left column: the book's numbers
COUNT_W = 64             # right column: tickets used in the book
ROW_H, BAND_H, HEAD = 16, 10, 18
MIN_MARK_W = 1.5         # a single ticket stays visible


@dataclass
class _Band:
    """A row of the picture: one book (or aligned block outside the register)."""

    ks: int
    ke: int
    outside: bool


def _rng(first: int, last: int) -> str:
    return str(first) if first == last else f"{first}–{last}"


def _ranges(led: TicketLedger, s, e) -> str:
    """`151–200, 260, …` for a tooltip: the first few ranges, then how many more."""
    parts = [_rng(int(a), int(b)) for a, b in zip(led.number(s[:MAX_TITLE_RANGES]), led.number(e[:MAX_TITLE_RANGES]))]
    if len(s) > MAX_TITLE_RANGES:
        parts.append(f"… (+{len(s) - MAX_TITLE_RANGES})")
    return ", ".join(parts)


def _seance_spans(led: TicketLedger) -> Columns:
    """Used numbers per séance as merged key intervals (seance, s, e), sorted by s:
    what one séance detached, drawn in one shade."""
    r = led.runs
    seance, s, e = merge_grouped(r["seance"], r["ks"], r["ke"])
    return Columns({"seance": seance, "s": s, "e": e})


def _cut(xs, xe, seance, bs, be, rows):
    """Intervals x cut at the rows selected by the mask `rows`: row index, start,
    end, and the séance of each piece (0 when `seance` is None)."""
    sel = np.flatnonzero(rows)
    i, j, s, e = intervals.pieces(np.asarray(xs, dtype=np.int64), np.asarray(xe, dtype=np.int64), bs[sel], be[sel])
    return sel[j], s, e, (np.asarray(seance, dtype=np.int64)[i] if seance is not None else np.zeros(len(i), np.int64))


def _sum_by(j: np.ndarray, w: np.ndarray, n: int) -> np.ndarray:
    return np.bincount(j, weights=w, minlength=n).astype(np.int64) if len(j) else np.zeros(n, dtype=np.int64)


def _value_of_row(result: AuditResult) -> dict[int, int]:
    """Ticket value of each tickets row (source row number → cents)."""
    if "tickets" not in result.carnet.tables:
        return {}
    valeur = column(result.carnet, "tickets", "valeur_cents")
    known = valeur != NA_INT
    return dict(zip(column(result.carnet, "tickets", "_row")[known].tolist(), valeur[known].tolist()))


def _owed_by_value(result: AuditResult) -> dict[int, int]:
    """EC83-01 impacts per ticket value: the value of the tickets row each
    finding sits on (where numbers resume, a run of that value)."""
    value_of = _value_of_row(result)
    missing = ticket_map_code(TicketMap.MISSING)
    owed: dict[int, int] = {}
    for f in result.findings:
        if f.code == missing and f.impact_cents > 0:
            v = value_of.get(f.row, 0)
            owed[v] = owed.get(v, 0) + int(f.impact_cents)
    return owed


def _findings_by_value(result: AuditResult, code: str) -> dict[int, int]:
    """Findings of `code` per ticket value (the value of the tickets row each sits on)."""
    value_of = _value_of_row(result)
    n: dict[int, int] = {}
    for f in result.findings:
        if f.code == code and f.table == "tickets":
            v = value_of.get(f.row, 0)
            n[v] = n.get(v, 0) + 1
    return n


def face_per_seance(result: AuditResult) -> dict[int, int] | None:
    """Face value of the tickets detached in each séance (readable rows, both
    phases, values outside the profile included, as EC561-03 counts them);
    None when the tickets table cannot be read."""
    led = _ledger(result)
    if led is None:
        return None
    r = led.rows
    known = r["seance"] != NA_INT
    ids, inv = np.unique(r["seance"][known], return_inverse=True)
    per = np.zeros(len(ids), dtype=np.int64)
    np.add.at(per, inv, r["face"][known])
    return dict(zip(ids.tolist(), per.tolist()))


def _checked(result: AuditResult) -> set[str]:
    return {st.code for st in result.rules if st.status is Status.CHECKED}


def _ledger(result: AuditResult) -> TicketLedger | None:
    if ticket_map_code(TicketMap.MISSING) not in _checked(result) or "tickets" not in result.carnet.tables:
        return None
    profile: Profile = result.profile or load_profile()
    return ledger(result.carnet, profile)


def tickets_section(result: AuditResult, lab: dict, lang: str) -> TicketSection:
    """Everything `_tickets.html.j2` shows."""
    led = _ledger(result)
    checked = _checked(result)
    owed = _owed_by_value(result)
    missing_code, duplicate_code, outside_code = (ticket_map_code(TicketMap.MISSING),
                                                  ticket_map_code(TicketMap.DUPLICATES),
                                                  ticket_map_code(TicketMap.OUTSIDE))
    outside_findings = _findings_by_value(result, outside_code)
    total_owed = sum(owed.values())
    section = TicketSection(
        checked=led is not None, series=[], total_owed_cents=total_owed, total_owed=format_cents(total_owed, lang),
        total_missing=0, note="",
        reason="" if led is not None else next((st.reason or "" for st in result.rules if st.code == missing_code), ""))
    if led is None:
        return section
    left_rows = len(led.rows) - len(led.runs)
    if left_rows:
        section.note = lab["tk_rows_left_out"].format(n=left_rows)
    spans = _seance_spans(led)

    def runs_text(n: int) -> str:
        return lab["tk_in_runs"].format(n=n) if n else ""

    seance_rank = {s: k for k, s in enumerate(sorted(set(spans["seance"].tolist())))}
    us, ue = led.used
    ms, me, _ = led.missing
    rep = led.repeats
    ds, de = rep["s"], rep["e"]
    o = np.argsort(ds, kind="stable")
    dup_ms, dup_me = merge(ds[o], de[o])        # numbers detached more than once, merged for drawing
    register = led.books is not None
    os_, oe = led.outside if register else (us[:0], ue[:0])
    # Rows: the books this carnet draws from (as the rules see them), and aligned
    # blocks for the numbers outside the register.
    if register:
        bs, be = led.books["ks"][led.opened], led.books["ke"][led.opened]
    else:
        bs, be = led.aligned_blocks(us, ue)
    xs, xe = led.aligned_blocks(os_, oe)
    out_spans = intervals.pieces(spans["s"], spans["e"], os_, oe)
    total_missing = 0
    for vid, valeur in enumerate(led.values.tolist()):
        lo, hi = vid * led.stride, (vid + 1) * led.stride

        def part(s, e):
            """The intervals of this value (keys of one value lie in [lo, hi))."""
            k = (s >= lo) & (s < hi)
            return s[k], e[k]

        vu = part(us, ue)
        if len(vu[0]) == 0:
            continue
        vm, vd, vo = part(ms, me), part(dup_ms, dup_me), part(os_, oe)
        vrep = (ds >= lo) & (ds < hi)
        vspans = spans.take((spans["s"] >= lo) & (spans["s"] < hi))
        seances = sorted({s for s in vspans["seance"].tolist() if s != NA_INT})
        missing = int((vm[1] - vm[0] + 1).sum())
        total_missing += missing
        dup = int((de[vrep] - ds[vrep] + 1).sum())
        outside = int((vo[1] - vo[0] + 1).sum())
        books = part(bs, be)
        chart = _picture(led, valeur, books, part(xs, xe), vu, vm, vd, vo, vspans,
                         _outside_spans(spans, out_spans, lo, hi), seance_rank, lab, lang)
        text = format_cents(valeur, lang)
        chart.desc = lab["tk_desc"].format(valeur=text, books=len(books[0]), used=int((vu[1] - vu[0] + 1).sum()),
                                           missing=missing, dup=dup, outside=outside)
        v_owed = owed.get(valeur, 0)
        section.series.append(TicketValue(
            valeur_cents=valeur, valeur=text, anchor=f"tickets-{valeur}", books=len(books[0]),
            used=int((vu[1] - vu[0] + 1).sum()),
            seances=("" if not seances else str(seances[0]) if len(seances) == 1
                     else f"{seances[0]} → {seances[-1]} ({len(seances)})"),
            missing=str(missing), missing_runs=len(vm[0]), missing_runs_text=runs_text(len(vm[0])),
            owed_cents=v_owed, owed=format_cents(v_owed, lang),
            duplicates=str(dup) if duplicate_code in checked else lab["not_checked"],
            duplicate_runs=int(vrep.sum()), duplicate_runs_text=runs_text(int(vrep.sum())),
            outside=str(outside) if outside_code in checked else lab["not_checked"],
            outside_runs=len(vo[0]), outside_runs_text=runs_text(len(vo[0])),
            # EC561-01 reports each stretch outside the register, and each book
            # used before its service date: the value's other EC561-01 findings.
            early=str(outside_findings.get(valeur, 0) - len(vo[0])) if outside_code in checked else lab["not_checked"],
            early_findings=outside_findings.get(valeur, 0) - len(vo[0]),
            chart=chart, label=lab["tk_chart"].format(valeur=text)))
    section.total_missing = total_missing
    return section


def _outside_spans(spans: Columns, pieces, lo: int, hi: int) -> Columns:
    """The séance spans cut to the numbers outside the register, for one value."""
    i, _, s, e = pieces
    k = (s >= lo) & (s < hi)
    return Columns({"seance": spans["seance"][i[k]], "s": s[k], "e": e[k]})


def _picture(led: TicketLedger, valeur: int, books, blocks, used, missing, dups, outside, spans: Columns,
             out_spans: Columns, seance_rank: dict[int, int], lab: dict, lang: str) -> Chart:
    """One value's series: a row per book, x = the ticket's place in its book."""
    size = led.book_size
    bands = sorted([_Band(int(s), int(e), False) for s, e in zip(*books)]
                   + [_Band(int(s), int(e), True) for s, e in zip(*blocks)], key=lambda b: (b.ks, b.outside))
    n = len(bands)
    bs = np.array([b.ks for b in bands], dtype=np.int64)
    be = np.array([b.ke for b in bands], dtype=np.int64)
    is_out = np.array([b.outside for b in bands], dtype=bool)
    books_rows, out_rows = ~is_out, is_out
    # Every interval cut at the rows it crosses. Book rows show the book's used
    # numbers and its holes; out-of-register rows only the numbers outside every book.
    cut = {"spans": _cut(spans["s"], spans["e"], spans["seance"], bs, be, books_rows),
           "out": _cut(out_spans["s"], out_spans["e"], out_spans["seance"],
                       bs, be, out_rows),
           "used": _cut(*used, None, bs, be, books_rows),
           "missing": _cut(*missing, None, bs, be, books_rows)}
    cut["outside"] = _cut(*outside, None, bs, be, out_rows)
    _, _, dos, doe = intervals.pieces(dups[0], dups[1], outside[0], outside[1])
    cut["dup"] = tuple(np.concatenate(p) for p in zip(_cut(*dups, None, bs, be, books_rows),
                                                     _cut(dos, doe, None, bs, be, out_rows)))
    # Tickets drawn in a row: used numbers of the book, or the out-of-register numbers of the block.
    j, s, e, _ = cut["used"]
    drawn = _sum_by(j, e - s + 1, n)
    j, s, e, _ = cut["out"]
    drawn += _sum_by(j, e - s + 1, n)
    marks = {k: _sum_by(cut[k][0], np.ones(len(cut[k][0])), n) for k in ("missing", "dup", "outside")}
    pieces = _sum_by(cut["spans"][0], np.ones(len(cut["spans"][0])), n) + _sum_by(
        cut["out"][0], np.ones(len(cut["out"][0])), n)
    cost = pieces + marks["missing"] + marks["dup"] + 1
    full = (~is_out) & (drawn == be - bs + 1) & (marks["missing"] == 0) & (marks["dup"] == 0)
    marked = is_out | (marks["missing"] > 0) | (marks["dup"] > 0)
    # Consecutive books used from end to end are one condensed row; a lone one is drawn like the others.
    edge = np.flatnonzero(np.diff(cat(0, full.astype(np.int8), 0)))
    lone = np.zeros(n, dtype=bool)
    starts, ends = edge[0::2], edge[1::2]
    lone[starts[ends - starts == 1]] = True
    # Detailed rows: all of them when they fit, else the marked rows first, in number order.
    detail = np.flatnonzero(~full | lone)
    chosen: set[int] = set()
    if len(detail) <= MAX_DETAILED and int(cost[detail].sum()) <= MAX_SEGMENTS:
        chosen = set(detail.tolist())
    else:
        budget = MAX_SEGMENTS
        for k in sorted(detail.tolist(), key=lambda k: (not marked[k], k)):
            if len(chosen) < MAX_DETAILED and cost[k] <= budget:
                chosen.add(k)
                budget -= int(cost[k])
    # Rows in number order: a chosen band, or a stretch of bands between chosen ones.
    rows: list[tuple[str, list[int]]] = []
    for k in range(n):
        kind = "band" if k in chosen else ("full" if full[k] else "left")
        if kind != "band" and rows and rows[-1][0] != "band":
            if rows[-1][0] == "full" and kind == "left":
                rows[-1] = ("left", rows[-1][1])
            rows[-1][1].append(k)
        else:
            rows.append((kind, [k]))
    plot_w = WIDTH - LABEL_W - COUNT_W
    height = HEAD + ROW_H * len(rows) + 4
    chart = Chart(WIDTH, height)
    for pos in sorted({1, size} | {size * q // 4 for q in range(1, 4)}):
        chart.labels.append(Label(_n(LABEL_W + (pos - 0.5) * plot_w / size), "12", str(pos), "middle", "axis"))
    chart.labels.append(Label(_n(WIDTH - 2), "12", lab["tk_used_head"], "end", "axis"))
    valeur_text = format_cents(valeur, lang)

    def x_of(start_key: np.ndarray, band_start: int) -> np.ndarray:
        return LABEL_W + (start_key - band_start) * plot_w / size

    left = {"missing": 0, "dup": 0, "outside": 0}     # marks in the rows not drawn in detail
    for r, (kind, ks) in enumerate(rows):
        y0 = HEAD + r * ROW_H
        first, last = bands[ks[0]], bands[ks[-1]]
        span = _rng(int(led.number(first.ks)), int(led.number(last.ke)))
        chart.labels.append(Label(_n(LABEL_W - 6), _n(y0 + BAND_H - 1), span, "end",
                                  "tk-out-label" if first.outside and len(ks) == 1 else ""))
        if kind == "full":
            used_n = int(drawn[ks].sum())
            chart.bars.append(Bar(_n(LABEL_W), _n(y0), _n(plot_w), str(BAND_H), "tk-full",
                                  lab["tk_full_title"].format(n=len(ks), span=span, used=used_n)))
            chart.labels.append(Label(_n(LABEL_W + plot_w / 2), _n(y0 + BAND_H - 1.5),
                                      lab["tk_full_row"].format(n=len(ks)), "middle", "tk-in"))
            chart.labels.append(Label(_n(WIDTH - COUNT_W + 4), _n(y0 + BAND_H - 1), str(used_n), "start"))
            continue
        if kind == "left":
            for name in left:
                left[name] += int(marks[name][ks].sum())
            n_marks = sum(int(marks[name][ks].sum()) for name in left)
            chart.bars.append(Bar(_n(LABEL_W), _n(y0), _n(plot_w), str(BAND_H), "tk-left",
                                  lab["tk_left_title"].format(n=len(ks), span=span, marks=n_marks)))
            chart.labels.append(Label(_n(LABEL_W + plot_w / 2), _n(y0 + BAND_H - 1.5),
                                      lab["tk_left_row"].format(n=len(ks)), "middle", "tk-in-muted"))
            chart.labels.append(Label(_n(WIDTH - COUNT_W + 4), _n(y0 + BAND_H - 1), str(int(drawn[ks].sum())),
                                      "start"))
            continue
        k = ks[0]
        band = bands[k]
        track_title = (lab["tk_out_track"] if band.outside else lab["tk_book_track"]).format(
            span=span, used=int(drawn[k]), size=band.ke - band.ks + 1, valeur=valeur_text)
        chart.bars.append(Bar(_n(LABEL_W), _n(y0), _n((band.ke - band.ks + 1) * plot_w / size), str(BAND_H),
                              "tk-track-out" if band.outside else "tk-track", track_title))
        # What each séance detached here, alternating shades so that séances part visibly.
        j, s, e, seance = cut["out" if band.outside else "spans"]
        sel = j == k
        for sn in sorted(set(seance[sel].tolist()), key=lambda v: (v == NA_INT, v)):
            one = sel & (seance == sn)
            cls = "tk-outside" if band.outside else ("tk-used alt" if seance_rank.get(sn, 0) % 2 else "tk-used")
            name = "?" if sn == NA_INT else str(sn)
            chart.paths.append((cls, _rects(x_of(s[one], band.ks), (e[one] - s[one] + 1) * plot_w / size, y0,
                                            0, BAND_H),
                                lab["tk_seance_title"].format(seance=name, ranges=_ranges(led, s[one], e[one]))))
        for name, cls, key, dy, h in (("missing", "tk-missing", "tk_missing_title", 0, BAND_H),
                                      ("dup", "tk-dup", "tk_dup_title", -2, BAND_H + 4)):
            j, s, e, _ = cut[name]
            one = j == k
            if one.any():
                chart.paths.append((cls, _rects(x_of(s[one], band.ks), (e[one] - s[one] + 1) * plot_w / size, y0,
                                                dy, h),
                                    lab[key].format(ranges=_ranges(led, s[one], e[one]),
                                                    n=int((e[one] - s[one] + 1).sum()))))
        chart.labels.append(Label(_n(WIDTH - COUNT_W + 4), _n(y0 + BAND_H - 1),
                                  f"{int(drawn[k])}/{band.ke - band.ks + 1}", "start"))
    if len(chosen) < len(detail):
        chart.note = lab["tk_cut"].format(drawn=len(chosen), total=len(detail), left=len(detail) - len(chosen),
                                          **left)
    return chart


def _rects(x: np.ndarray, w: np.ndarray, y0: float, dy: float, h: float) -> str:
    """Rectangles as one path: `M x y h w v h h -w z` each."""
    parts = []
    for xi, wi in zip(x.tolist(), w.tolist()):
        wi = max(wi, MIN_MARK_W)
        parts.append(f"M{_n(xi)} {_n(y0 + dy)}h{_n(wi)}v{_n(h)}h-{_n(wi)}z")
    return "".join(parts)
