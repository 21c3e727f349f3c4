"""The picture of each table's archive in index.html (issue 24, point 4): per
casino and table, its carnets as bars along the dates, and the findings of
the rules across its carnets marked where they are (overlaps over the days
both carnets hold; séances and tickets missing, tickets going backwards, at
the boundary between the two carnets), with their money; then the books the
table really left open (those of its last carnet).

Everything comes from summary.json (`tables` with their `timeline`, and
`cross_carnet`): index.html can be made again from it alone. Geometry is
computed here; the template (`_archive.html.j2`) only draws what it is given.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field

from auditor.catalogue import load_catalogue
from auditor.i18n import format_day, labels
from auditor.money import format_cents
from auditor.report.charts import Label, _n   # one geometry style for every chart

WIDTH = 760
LABEL_W = 96           # left column: the lanes' codes
BAR_Y, BAR_H = 20, 24
LANE_H = 20
MIN_TEXT_W = 34        # a bar narrower than this shows its séances on hover only
MAX_DAY_LABELS = 8


@dataclass
class CarnetBar:
    """One carnet of the table: its rectangle, its link, its hover text."""

    x: str
    y: str
    w: str
    h: str
    cls: str
    href: str | None
    title: str
    text: str           # séance numbers under the bar ("" when it is too narrow)
    text_x: str


@dataclass
class Mark:
    """A finding across two carnets (or several of one pair), where it is."""

    cls: str            # severity: error / warning
    path: str           # SVG path: a diamond at the boundary, or the overlapping days
    title: str
    guide: tuple[str, str, str, str] | None    # x1 y1 x2 y2: from the bars down to the lane
    label: Label | None  # the money, beside the mark


@dataclass
class Lane:
    """One rule across carnets: its row under the bars."""

    code: str
    title: str           # the rule's title (hover)
    y: str
    text_y: str
    status: str          # checked / not_checked
    note: str            # why not checked ("" when checked)
    marks: list[Mark] = field(default_factory=list)


@dataclass
class OpenBook:
    """A book in progress at the end of a carnet, as the section words it."""

    text: str
    href: str | None
    carnet: str


@dataclass
class TablePicture:
    """One line of the section: a table of a casino and its archive."""

    key: str             # "casino|table", stable, for tests and anchors
    heading: str
    period: str
    width: int
    height: int
    desc: str
    day_labels: list[Label]
    bars: list[CarnetBar]
    lanes: list[Lane]
    open_books: list[OpenBook]        # the table's real open books: its last carnet's
    left_open: list[OpenBook]         # books an earlier carnet left that the next did not continue
    continued: str                    # how many EC83-02 of earlier carnets the next carnet continues
    gaps: list[str]                   # the money of the tickets missing between carnets, per boundary


@dataclass
class ArchiveView:
    """The section: one picture per table, and per carnet id the note its
    index row gets (its EC83-02 that the next carnet continues)."""

    tables: list[TablePicture]
    continued: dict[str, str] = field(default_factory=dict)


def _day(iso: str) -> dt.date:
    return dt.date.fromisoformat(iso)


def _ranges(seances: dict) -> str:
    a, b = seances.get("first"), seances.get("last")
    return str(a) if a == b else f"{a}–{b}"


def _book_text(b: dict, lab: dict, lang: str) -> str:
    return lab["archive_open_book"].format(valeur=format_cents(b["valeur_cents"], lang), first=b["book_first"],
                                           last=b["book_last"], used=b["last"], remaining=b["remaining"])


def _carnet_title(c: dict, lab: dict, lang: str) -> str:
    """The hover text of a bar: which carnet, its period, séances, ticket ranges per value, open books."""
    period = format_day(c["first_day"] if c["first_day"] == c["last_day"]
                        else f"{c['first_day']} → {c['last_day']}", lang)
    lines = [c["path"], lab["archive_bar_period"].format(period=period),
             lab["archive_bar_seances"].format(seances=_ranges(c["seances"]), n=c["seances"]["count"])]
    if not c.get("tickets_readable", True):
        lines.append(lab["archive_bar_tickets_unreadable"])
    for t in c.get("tickets") or []:
        lines.append(lab["archive_bar_tickets"].format(valeur=format_cents(t["valeur_cents"], lang),
                                                       first=t["first"], last=t["last"]))
    for b in c.get("open_books") or []:
        key = "archive_bar_book_continued" if b.get("continued_by") else "archive_bar_book_open"
        lines.append(lab[key].format(book=_book_text(b, lab, lang)))
    return "\n".join(lines)


def _day_labels(first: dt.date, days: int, x, lang: str) -> list[Label]:
    """At most MAX_DAY_LABELS dates along the top, the first and last always."""
    step = max(1, -(-days // MAX_DAY_LABELS))
    at = list(range(0, days, step))
    if at[-1] != days - 1:
        if days - 1 - at[-1] < step / 2 and len(at) > 1:
            at[-1] = days - 1
        else:
            at.append(days - 1)
    return [Label(_n(x(k + 0.5)), "12", format_day((first + dt.timedelta(days=k)).isoformat(), lang), "middle", "axis")
            for k in at]


def _picture(t: dict, findings: list[dict], reports: dict, lab: dict, lang: str, titles: dict) -> TablePicture:
    timeline = t.get("timeline") or []
    first = min(_day(c["first_day"]) for c in timeline)
    last = max(_day(c["last_day"]) for c in timeline)
    days = (last - first).days + 1
    plot_w = WIDTH - LABEL_W - 8

    def x(day: float) -> float:
        return LABEL_W + plot_w * day / days

    def offset(iso: str) -> int:
        return (_day(iso) - first).days

    bars = []
    where: dict[str, tuple[float, float]] = {}      # carnet id → (x start, x end)
    for k, c in enumerate(timeline):
        x0, x1 = x(offset(c["first_day"])), x(offset(c["last_day"]) + 1)
        where[c["id"]] = (x0, x1)
        # A hair between two carnets of consecutive days, so each bar stays its own.
        w = max(x1 - x0 - (1 if x1 - x0 > 3 else 0), 1)
        text = _ranges(c["seances"]) if w >= MIN_TEXT_W else ""
        bars.append(CarnetBar(_n(x0), str(BAR_Y), _n(w), str(BAR_H), "bar alt" if k % 2 else "bar",
                              reports.get(c["id"]), _carnet_title(c, lab, lang), text, _n(x0 + w / 2)))
    # Lanes in the regulation's numbering of the codes: EC64-10, EC64-11, EC83-04, EC561-04.
    codes = sorted(t.get("rules") or {}, key=lambda c: tuple(int(x) for x in c[2:].split("-")))
    lanes_top = BAR_Y + BAR_H + 18
    lanes: list[Lane] = []
    by_code: dict[str, list[dict]] = {}
    for f in findings:
        by_code.setdefault(f["code"], []).append(f)
    for n, code in enumerate(codes):
        rule = t["rules"][code]
        y = lanes_top + n * LANE_H
        lane = Lane(code, titles.get(code, code), _n(y), _n(y + 14), rule.get("status", ""),
                    "" if rule.get("status") == "checked" else lab["archive_not_checked"].format(
                        reason=rule.get("reason") or ""))
        # The findings of one pair of carnets share one mark: "4,90 € + 1,00 €" for two runs of one gap.
        pairs: dict[tuple[str, str], list[dict]] = {}
        for f in by_code.get(code, []):
            later, earlier = f["across"][0]["carnet"], f["across"][1]["carnet"]
            pairs.setdefault((earlier, later), []).append(f)
        for (earlier, later), group in pairs.items():
            if earlier not in where or later not in where:
                continue
            e0, e1 = where[earlier]
            l0, l1 = where[later]
            cls = "error" if any(f["severity"] == "error" for f in group) else "warning"
            cy = y + LANE_H / 2
            title = "\n".join(f["message"] for f in group)
            money = [format_cents(int(f["impact_cents"]), lang) for f in group if f.get("impact_cents")]
            if l0 < e1:
                # An overlap: the days both carnets hold, drawn over the lane and the bars.
                a, b = l0, min(e1, l1)
                d = f"M{_n(a)} {_n(y + 3)}H{_n(max(b, a + 2))}V{_n(y + LANE_H - 3)}H{_n(a)}Z"
                guide = (_n((a + b) / 2), str(BAR_Y + BAR_H), _n((a + b) / 2), _n(y + 3))
                mx = max(b, a + 2)
            else:
                mx = (e1 + l0) / 2
                d = f"M{_n(mx)} {_n(cy - 6)}L{_n(mx + 6)} {_n(cy)}L{_n(mx)} {_n(cy + 6)}L{_n(mx - 6)} {_n(cy)}Z"
                guide = (_n(mx), str(BAR_Y), _n(mx), _n(cy - 6))
                mx += 8
            text = " + ".join(money)
            anchor = "start" if mx < WIDTH - 120 else "end"
            label = Label(_n(mx if anchor == "start" else mx - 16), _n(cy + 4), text, anchor, "money") if text else None
            lane.marks.append(Mark(cls, d, title, guide, label))
        lanes.append(lane)
    height = lanes_top + len(codes) * LANE_H + 6
    # The books: the last carnet's are the table's real open books; an earlier
    # carnet's that its next carnet continues are not (EC83-02 stays information).
    open_books = [OpenBook(_book_text(b, lab, lang), reports.get(b["carnet"]), b["carnet"])
                  for b in t.get("open_books") or []]
    left_open, continued = [], 0
    trusted = _placed(t)
    for c in timeline[:-1]:
        for b in c.get("open_books") or []:
            if b.get("continued_by") and trusted:
                continued += 1
            else:
                left_open.append(OpenBook(lab["archive_left_open"].format(book=_book_text(b, lab, lang),
                                                                           path=c["path"]),
                                          reports.get(c["id"]), c["id"]))
    gaps = [m.label.text for lane in lanes for m in lane.marks if m.label is not None]
    heading = lab["archive_table"].format(casino=t["casino"], table=t["table"], n=len(timeline))
    period = format_day(f"{first.isoformat()} → {last.isoformat()}" if first != last else first.isoformat(), lang)
    desc = lab["archive_desc"].format(n=len(timeline), period=period,
                                      marks=sum(len(lane.marks) for lane in lanes))
    return TablePicture(f"{t['casino']}|{t['table']}", heading, period, WIDTH, height, desc,
                        _day_labels(first, days, x, lang), bars, lanes, open_books, left_open,
                        lab["archive_continued"].format(n=continued) if continued else "", gaps)


def _placed(t: dict) -> bool:
    """Whether the table's carnets are known to be all of it in order: some
    rule across its carnets was checked (a carnet that cannot be placed stops
    them all, and might lie anywhere between two carnets). Only then is a book
    said to be continued by the next carnet."""
    return any(r.get("status") == "checked" for r in (t.get("rules") or {}).values())


def _findings_of_tables(tables: list[dict], cross: list[dict]) -> list[list[dict]]:
    """Per table, the findings across carnets of its rules whose carnets (two
    or more) are all of its timeline, in summary.json's order. Each finding is
    placed through the tables of its carnets, not by testing it against every
    table (a night of 1,000 carnets: 84 tables, 7,286 findings)."""
    tables_of: dict[str, set[int]] = {}
    for i, t in enumerate(tables):
        for c in t["timeline"]:
            tables_of.setdefault(c["id"], set()).add(i)
    codes = [set(t.get("rules") or {}) for t in tables]
    mine: list[list[dict]] = [[] for _ in tables]
    for f in cross:
        across = f.get("across") or []
        if len(across) < 2:
            continue
        common = set.intersection(*(tables_of.get(p["carnet"], set()) for p in across))
        for i in sorted(common):
            if f.get("code") in codes[i]:
                mine[i].append(f)
    return mine


def archive_view(summary_doc: dict, lang: str) -> ArchiveView | None:
    """The section of index.html, or None when the batch has no table to draw."""
    tables = [t for t in summary_doc.get("tables") or [] if t.get("timeline")]
    if not tables:
        return None
    lab = labels(lang)
    catalogue = load_catalogue()
    reports = {e["id"]: e.get("report") for e in summary_doc.get("carnets") or []}
    cross = summary_doc.get("cross_carnet") or []
    pictures = []
    continued: dict[str, str] = {}
    mine = _findings_of_tables(tables, cross)
    for t, found in zip(tables, mine):
        codes = set(t.get("rules") or {})
        titles = {c: catalogue[c].title.get(lang, c) for c in codes if c in catalogue}
        pictures.append(_picture(t, found, reports, lab, lang, titles))
        for c in t["timeline"][:-1] if _placed(t) else ():
            n = sum(1 for b in c.get("open_books") or [] if b.get("continued_by"))
            if n:
                continued[c["id"]] = lab["archive_row_continued"].format(n=n)
    return ArchiveView(pictures, continued)
