"""Geometry of the report's inline SVG charts, computed once here so that the
templates only draw rectangles and paths they are given.

Sizes are bounded whatever the carnet: the timeline has at most
MAX_TIMELINE_ROWS séances and TIMELINE_SLOTS slots per séance, and marks of
one severity on one séance are a single <path>.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field

from auditor.model import AuditResult
from auditor.model import Severity
from auditor.money import format_cents

WIDTH = 760
LABEL_W = 96           # left column: axis labels, codes, séance numbers
MAX_TIMELINE_ROWS = 100
TIMELINE_SLOTS = 150   # coups per séance drawn one by one up to this, binned beyond
MAX_X_LABELS = 16


def css_string(text: str) -> str:
    """A CSS string literal for `text`: every character but ASCII letters,
    digits and spaces as a hex escape, so no quote, backslash or `<` survives
    (it is placed in a style attribute, then HTML-escaped again)."""
    out = []
    for ch in text:
        if (ch.isascii() and ch.isalnum()) or ch == " ":
            out.append(ch)
        else:
            out.append(f"\\{ord(ch):x} ")
    return '"' + "".join(out) + '"'


def _n(x: float) -> str:
    """Coordinates with one decimal and no trailing zeros: short, stable output."""
    text = f"{x:.1f}"
    return text[:-2] if text.endswith(".0") else text


def nice_step(top: int, ticks: int = 4) -> int:
    """A 1-2-5 step so that about `ticks` gridlines cover 0 … top."""
    if top <= 0:
        return 1
    raw = top / ticks
    mag = 10 ** int(math.floor(math.log10(raw)))
    for m in (1, 2, 5, 10):
        if m * mag >= raw:
            return int(m * mag) or 1
    return int(10 * mag)


@dataclass
class Bar:
    """A rectangle of a chart, in SVG coordinates."""

    x: str
    y: str
    w: str
    h: str
    cls: str
    title: str


@dataclass
class Label:
    """A text of a chart, in SVG coordinates."""

    x: str
    y: str
    text: str
    anchor: str = "middle"
    cls: str = ""


@dataclass
class Chart:
    """An SVG chart as the templates draw it: bars, labels and gridlines."""

    width: int
    height: int
    bars: list[Bar] = field(default_factory=list)
    labels: list[Label] = field(default_factory=list)
    lines: list[tuple[str, str, str, str]] = field(default_factory=list)   # x1 y1 x2 y2 (gridlines)
    paths: list[tuple[str, str, str]] = field(default_factory=list)        # css class, d, title
    note: str = ""
    desc: str = ""         # what the picture shows, in words (the SVG's <desc>)


def levy_chart(seances: list[int], recorded: dict[int, int], expected: dict[int, int], lab: dict,
               lang: str, tickets: dict[int, int] | None = None) -> Chart | None:
    """Per séance: the levy expected, the levy recorded and, when the tickets
    table was read, the face value of the tickets detached in the séance."""
    if not seances:
        return None
    series = [("expected", expected, lab["levy_expected"]), ("recorded", recorded, lab["levy_recorded"])]
    if tickets is not None:
        series.append(("tickets", tickets, lab["levy_tickets"]))
    top = max(amounts.get(s, 0) for _, amounts, _ in series for s in seances)
    if top <= 0:
        return None
    height, top_pad, bottom = 200, 10, 34
    plot_h = height - top_pad - bottom
    plot_w = WIDTH - LABEL_W - 8
    step = nice_step(top)
    y_max = step * math.ceil(top / step)
    chart = Chart(WIDTH, height)

    def y(v: int) -> float:
        return top_pad + plot_h - plot_h * max(v, 0) / y_max

    for k in range(0, y_max + 1, step):
        chart.lines.append((_n(LABEL_W), _n(y(k)), _n(WIDTH - 8), _n(y(k))))
        chart.labels.append(Label(_n(LABEL_W - 6), _n(y(k) + 4), format_cents(k, lang), "end"))
    slot = plot_w / len(seances)
    bar_w = min(slot * 0.8 / len(series), 22)
    every = max(1, math.ceil(len(seances) / MAX_X_LABELS))
    for i, s in enumerate(seances):
        x0 = LABEL_W + i * slot + slot / 2 - bar_w * len(series) / 2
        for k, (cls, amounts, name) in enumerate(series):
            amount = amounts.get(s, 0)
            h = plot_h * max(amount, 0) / y_max
            chart.bars.append(Bar(_n(x0 + k * bar_w), _n(y(amount)), _n(max(bar_w - 1, 0.5)), _n(h), cls,
                                  lab["chart_levy_bar"].format(seance=s, what=name,
                                                               amount=format_cents(amount, lang))))
        if i % every == 0:
            chart.labels.append(Label(_n(LABEL_W + i * slot + slot / 2), _n(height - bottom + 14), str(s)))
    chart.labels.append(Label(_n(LABEL_W + plot_w / 2), _n(height - 4), lab["seance"], "middle", "axis"))
    return chart


def rules_chart(groups, lab: dict) -> Chart | None:
    """Findings per rule as horizontal bars (None without findings)."""
    if not groups:
        return None
    row_h = 20
    height = row_h * len(groups) + 8
    plot_w = WIDTH - LABEL_W - 70
    top = max(g.count for g in groups)
    chart = Chart(WIDTH, height)
    for i, g in enumerate(groups):
        y0 = 4 + i * row_h
        w = max(plot_w * g.count / top, 1)
        chart.bars.append(Bar(_n(LABEL_W), _n(y0 + 3), _n(w), _n(row_h - 6), g.severity,
                              lab["chart_rule_bar"].format(code=g.code, title=g.title, n=g.count)))
        chart.labels.append(Label(_n(LABEL_W - 6), _n(y0 + row_h / 2 + 4), g.code, "end"))
        chart.labels.append(Label(_n(LABEL_W + w + 6), _n(y0 + row_h / 2 + 4), str(g.count), "start"))
    return chart


def timeline_chart(result: AuditResult, seances: list[int], top_coup: dict[int, int], lab: dict) -> Chart | None:
    """Findings along the séances and coups, coloured by their worst severity (None without séances)."""
    if not seances:
        return None
    worst_slot: dict[int, dict[int, Severity]] = defaultdict(dict)
    worst_seance: dict[int, Severity] = {}
    top = max([top_coup.get(s, 0) for s in seances] + [1])
    for f in result.findings:
        if f.seance is None:
            continue
        if f.coup is None:
            worst_seance[f.seance] = max(worst_seance.get(f.seance, f.severity), f.severity)
            continue
        top = max(top, f.coup)
    slots = min(top, TIMELINE_SLOTS)

    def slot_of(coup: int) -> int:
        # Coup 1 … top onto slot 1 … slots; out-of-range numbers stay at the edges.
        return min(max(math.ceil(coup * slots / top), 1), slots)

    for f in result.findings:
        if f.seance is not None and f.coup is not None:
            k = slot_of(f.coup)
            cur = worst_slot[f.seance].get(k)
            worst_slot[f.seance][k] = f.severity if cur is None else max(cur, f.severity)
    shown = seances[:MAX_TIMELINE_ROWS]
    row_h, bar_h, head = 16, 10, 18
    height = head + row_h * len(shown) + 4
    plot_w = WIDTH - LABEL_W - 8
    slot_w = plot_w / slots
    chart = Chart(WIDTH, height)
    for c in sorted({1, top} | {round(top * k / 4) for k in range(1, 4)}):
        if c >= 1:
            x = LABEL_W + (slot_of(c) - 0.5) * slot_w
            chart.labels.append(Label(_n(x), "12", str(c), "middle", "axis"))
    for i, s in enumerate(shown):
        y0 = head + i * row_h
        chart.labels.append(Label(_n(LABEL_W - 16), _n(y0 + bar_h), str(s), "end"))
        n = top_coup.get(s, 0)
        if n:
            chart.bars.append(Bar(_n(LABEL_W), _n(y0), _n(slot_of(n) * slot_w), _n(bar_h), "track",
                                  lab["chart_timeline_row"].format(seance=s, coups=n,
                                                                   marked=len(worst_slot.get(s, {})))))
        if s in worst_seance:
            sev = worst_seance[s].label
            chart.bars.append(Bar(_n(LABEL_W - 12), _n(y0 + 1), "8", "8", sev,
                                  lab["chart_timeline_seance"].format(seance=s, severity=lab[sev])))
        by_sev: dict[str, list[str]] = defaultdict(list)
        for k, sev in sorted(worst_slot.get(s, {}).items()):
            x = LABEL_W + (k - 1) * slot_w
            by_sev[sev.label].append(f"M{_n(x)} {_n(y0)}h{_n(max(slot_w - 0.4, 0.6))}v{bar_h}h-{_n(max(slot_w - 0.4, 0.6))}z")
        for sev in ("info", "warning", "error"):   # errors drawn last, on top
            if by_sev.get(sev):
                chart.paths.append((sev, "".join(by_sev[sev]), lab["chart_timeline_marks"].format(
                    seance=s, severity=lab[sev], n=len(by_sev[sev]))))
    if len(seances) > len(shown):
        chart.note = lab["chart_timeline_cut"].format(shown=len(shown), total=len(seances))
    if top > slots:
        chart.note = " ".join(p for p in (chart.note, lab["chart_timeline_binned"].format(
            per=math.ceil(top / slots))) if p)
    return chart


@dataclass
class Charts:
    """The report's three charts; one with nothing to draw is None (the template says so)."""

    levy: Chart | None
    rules: Chart | None
    timeline: Chart | None


def report_charts(result: AuditResult, lab: dict, lang: str, groups, dates: dict[int, str],
                  n_coups: dict[int, int], top_coup: dict[int, int], levy_recorded: dict[int, int],
                  levy_codes: tuple[str, ...], tickets_face: dict[int, int] | None = None) -> Charts:
    """The three charts. `tickets_face`: face value of the tickets per séance (None: no tickets table read)."""
    seances = sorted(set(dates) | set(n_coups))
    # A séance known only from its tickets (an orphan, EC00-03) still shows their face value.
    levy_seances = sorted(set(seances) | set(tickets_face or ()))
    # Expected levy of a séance = what was recorded + what the levy rules found
    # missing (their impact is expected − recorded): the engine's figures, summed.
    expected = dict(levy_recorded)
    for f in result.findings:
        if f.code in levy_codes and f.seance is not None:
            expected[f.seance] = expected.get(f.seance, 0) + f.impact_cents
    return Charts(levy=levy_chart(levy_seances, levy_recorded, expected, lab, lang, tickets_face),
                  rules=rules_chart(groups, lab),
                  timeline=timeline_chart(result, seances, top_coup, lab))
