"""Hostile and broken input: the right EC00 finding, never a traceback, nothing
written outside --out, nothing from the carnet turned into markup or formulas.

The carnets are built by tests/hostile/make_hostile.py (nothing large is
committed); `EXPECTED` there says what each must give.
"""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import sys
import zipfile
from pathlib import Path

import html5lib
import pytest

from auditor.catalogue import load_catalogue, load_profile
from auditor.audit import audit
from auditor.synth.generate import Spec, generate, write_csv_folder, write_xlsx
from auditor.limits import Limits
from auditor.normalise import normalise
from auditor.audit import audit_path
from auditor.batch.plan import carnet_id, plan
from auditor.read import discover, read_carnet

sys.path.insert(0, str(Path(__file__).parent / "hostile"))
import make_hostile  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_carnets"


def run_cli(*args, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "auditor", *map(str, args)], capture_output=True, text=True,
                          cwd=cwd, env={**os.environ, "SOURCE_DATE_EPOCH": "1767225600",
                                        "PYTHONPATH": str(ROOT)})


def snapshot(root: Path, skip: Path) -> dict[str, int]:
    return {p.relative_to(root).as_posix(): p.stat().st_size for p in root.rglob("*")
            if p.is_file() and skip not in p.parents}


def message_pattern(code: str, kind: str) -> re.Pattern:
    template = load_catalogue()[code].messages[kind]["fr"]
    parts = re.split(r"\{[a-z_]+\}", template)
    return re.compile(".*".join(re.escape(p) for p in parts), re.S)


@pytest.fixture(scope="module")
def hostile_run(tmp_path_factory):
    base = tmp_path_factory.mktemp("hostile")
    folder = make_hostile.build(base / "in")
    out = base / "out"
    before = snapshot(base, out)
    batch = run_cli("audit", folder, "--out", out, "--format", "html,json", "--jobs", "1")
    climbing = run_cli("audit", Path("in") / "deep" / "deeper" / ".." / ".." / "x", "--out", out / "climb",
                       "--format", "html,json", cwd=base)
    after = snapshot(base, out)
    return folder, out, batch, climbing, before, after


@pytest.mark.slow
@pytest.mark.subprocess
def test_hostile_batch_exits_1_without_traceback(hostile_run):
    _, _, batch, climbing, _, _ = hostile_run
    for proc in (batch, climbing):
        assert proc.returncode == 1, proc.stderr[-2000:]
        assert "Traceback" not in proc.stderr


@pytest.mark.slow
@pytest.mark.subprocess
def test_nothing_written_outside_out(hostile_run):
    _, out, _, _, before, after = hostile_run
    assert before == after
    assert (out / "climb" / "x" / "findings.json").exists()
    assert sorted(p.name for p in (out / "climb").iterdir()) == ["x"]


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize("name", sorted(make_hostile.EXPECTED))
def test_each_hostile_carnet_gives_its_ec00(hostile_run, name):
    folder, out, _, _, _, _ = hostile_run
    code, kind = make_hostile.EXPECTED[name]
    doc = json.loads((out / carnet_id(name) / "findings.json").read_text(encoding="utf-8"))
    pattern = message_pattern(code, kind)
    hits = [f for f in doc["findings"] if f["code"] == code and pattern.fullmatch(f["message"])]
    assert hits, [(f["code"], f["message"]) for f in doc["findings"] if f["code"].startswith("EC00")]
    assert "erreur interne" not in json.dumps(doc, ensure_ascii=False)
    tables = doc["summary"]["tables"]
    assert sum(t["read"] for t in tables.values()) == doc["summary"]["rows_read"]
    assert all(t["read"] == t["audited"] + t["rejected"] for t in tables.values())


@pytest.mark.slow
@pytest.mark.subprocess
def test_no_markup_from_the_input_in_any_html(hostile_run):
    _, out, _, _, _, _ = hostile_run
    pages = sorted(out.rglob("*.html"))
    assert len(pages) >= len(make_hostile.EXPECTED)
    for page in pages:
        text = page.read_text(encoding="utf-8")
        tree = html5lib.parse(text, namespaceHTMLElements=False)
        for el in tree.iter():
            if not isinstance(el.tag, str):
                continue
            assert el.tag != "img", page
            assert not any(a.lower().startswith("on") for a in el.attrib), (page, el.tag, el.attrib)
            if el.tag == "script":
                assert "alert" not in (el.text or ""), page
        assert make_hostile.SCRIPT not in text and "<img src=x" not in text, page
    report = (out / "script-and-formula-text" / "report.html").read_text(encoding="utf-8")
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in report   # shown, as text
    # No page reorders what it shows: each bidirectional control is written as its code point.
    from auditor.report.html_report import BIDI_CONTROLS

    for page in pages:
        text = page.read_text(encoding="utf-8")
        assert not set(text) & set(BIDI_CONTROLS), page
    assert "&lt;U+202E&gt;00,01 &lt;U+2066&gt;x" in report
    found = json.loads((out / "script-and-formula-text" / "findings.json").read_text(encoding="utf-8"))
    assert any(make_hostile.BIDI in str(f["found"]) for f in found["findings"])   # the data keeps the text as read


@pytest.mark.parametrize("container", ["xlsx", "csv"])
def test_annotated_workbook_holds_no_formula_from_the_input(tmp_path, container):
    from auditor.report import excel_report
    from openpyxl import load_workbook

    tables = make_hostile.hostile_tables()
    source = (write_xlsx(tables, tmp_path / "c.xlsx") if container == "xlsx"
              else write_csv_folder(tables, tmp_path / "c"))
    result = audit_path(source, load_profile(), debug=True)
    target = excel_report.write_annotated(result, source, tmp_path / "annotated.xlsx")
    wb = load_workbook(target)
    texts = []
    for ws in wb.worksheets:
        for row in ws.iter_rows():
            for cell in row:
                assert cell.data_type != "f", (ws.title, cell.coordinate, cell.value)
                if isinstance(cell.value, str):
                    texts.append(cell.value)
    assert any(t.startswith("=HYPERLINK") for t in texts)   # kept, as text


# -- limits -----------------------------------------------------------------------

def _codes_kinds(raw) -> list[tuple[str, str, str | None]]:
    return [(p.code, p.kind, p.table) for p in raw.problems]


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    base = tmp_path_factory.mktemp("small")
    tables = generate(Spec(seances=1, coups=3, mises=3, seed=2))
    return write_xlsx(tables, base / "c.xlsx"), write_csv_folder(tables, base / "c")


def test_file_size_limit(small):
    xlsx, csv_folder = small
    raw = read_carnet(xlsx, Limits(max_file_bytes=1000))
    assert raw.unreadable and _codes_kinds(raw) == [("EC00-01", "file_too_large", None)]
    assert len(raw.sha256) == 64
    raw = read_carnet(csv_folder, Limits(max_file_bytes=200))
    too_large = {t for c, k, t in _codes_kinds(raw) if k == "file_too_large"}
    assert "mises" in too_large and "mises" not in raw.tables


@pytest.mark.parametrize("limit, kind", [
    (Limits(max_rows=5), "too_many_rows"),
    (Limits(max_columns=5), "too_many_columns"),
    (Limits(max_cells=30), "too_many_cells"),
])
def test_table_limits_in_both_containers(small, limit, kind):
    for path in small:
        raw = read_carnet(path, limit)
        refused = {t for c, k, t in _codes_kinds(raw) if k == kind}
        assert "mises" in refused, (path, _codes_kinds(raw))
        assert not refused & set(raw.tables)
        carnet = normalise(raw)
        result = audit(carnet, load_profile())   # the rest is audited; the refused table is not
        assert any(f.code == "EC00-01" and f.table == "mises" for f in result.findings)


def test_zip_ratio_limit_and_lying_sizes(small, tmp_path):
    xlsx, _ = small
    raw = read_carnet(xlsx, Limits(max_zip_ratio=2, zip_ratio_grace_bytes=1000))
    assert _codes_kinds(raw)[0][:2] == ("EC00-01", "zip_ratio")
    data = xlsx.read_bytes()
    member = make_hostile.sheet_member(data, "mises")
    with zipfile.ZipFile(io.BytesIO(data)) as z:
        real = z.getinfo(member).file_size
    lying = tmp_path / "lying.xlsx"
    lying.write_bytes(make_hostile.declared_size_bomb(data, member, real // 2))
    raw = read_carnet(lying)
    assert raw.unreadable and _codes_kinds(raw)[0][:2] == ("EC00-01", "zip_mismatch")


def test_formulas_without_saved_value_are_cell_errors_and_saved_ones_are_noted(tmp_path):
    path = make_hostile.build(tmp_path / "h") / "formulas-without-values.xlsx"
    result = audit_path(path, load_profile(), debug=True)
    unsaved = sorted((f for f in result.findings if f.code == "EC00-02" and "Formule" in f.message),
                     key=lambda f: f.row)
    assert [(f.table, f.column, f.cell) for f in unsaved] == [
        ("mises", "montant", "F2"), ("mises", "montant", "F3"), ("mises", "montant", f"F{unsaved[-1].row}")]
    assert all(f.found == "" for f in unsaved)
    coups = result.summary["tables"]["coups"]
    assert result.summary["formulas"] == coups["read"]
    assert coups["formulas"] == {"total_a": [f"F2:F{coups['read'] + 1}"]}
    # The saved totals are used: no total or levy finding comes from them.
    assert not [f for f in result.findings if f.table == "coups" and f.code.startswith("EC00")]


# -- row accounting --------------------------------------------------------------------

@pytest.mark.parametrize("path", discover(SAMPLES), ids=lambda p: p.relative_to(SAMPLES).as_posix())
def test_rows_read_equal_audited_plus_rejected_on_every_sample(path):
    result = audit_path(path, load_profile(), debug=True)
    s = result.summary
    assert sum(t["read"] for t in s["tables"].values()) == s["rows_read"]
    assert sum(t["rejected"] for t in s["tables"].values()) == s["rows_rejected"]
    for name, t in s["tables"].items():
        assert t["read"] == t["audited"] + t["rejected"] and t["audited"] >= 0
        rejected_rows = {f.row for f in result.findings
                         if f.table == name and f.code in ("EC00-02", "EC00-03")}
        assert len(rejected_rows) <= t["rejected"]
        assert sum(t["rejected_by"].values()) >= t["rejected"]


# -- output paths ------------------------------------------------------------------------

@pytest.mark.parametrize("relative", ["../../x", "..", ".", "", "/etc/passwd", "a\\..\\..\\b", "index.html",
                                      "CON", "nul.xlsx", "x" * 400, "é/ü<script>", "a\nb", "summary.json"])
def test_carnet_id_is_one_safe_path_component(relative, tmp_path):
    cid = carnet_id(relative)
    assert re.fullmatch(r"[A-Za-z0-9._-]{1,120}", cid)
    assert cid not in (".", "..") and cid.lower() not in ("index.html", "summary.json", "con", "nul")
    assert (tmp_path / cid).resolve().parent == tmp_path.resolve()


def test_plan_ids_are_unique_case_insensitively(tmp_path):
    tables = generate(Spec(seances=1, coups=2, mises=2, seed=1))
    for rel in ("A/c", "a/c", "a-2/c", "b/c"):
        write_csv_folder(tables, tmp_path / rel)
    (tmp_path / "a__c").mkdir()
    write_csv_folder(tables, tmp_path / "a__c")
    ids = [j.id for j in plan([tmp_path])]
    assert len({i.lower() for i in ids}) == len(ids) == 5


@pytest.mark.parametrize("path", sorted(SAMPLES.rglob("*.xlsx")), ids=lambda p: p.name)
def test_fast_and_exact_sheet_scans_agree(path):
    from auditor.read.sheet_scan import _scan_exact, _scan_plain

    try:
        z = zipfile.ZipFile(path)
    except zipfile.BadZipFile:
        pytest.skip("not a workbook (a sample of a damaged file)")
    for name in z.namelist():
        if name.startswith("xl/worksheets/sheet"):
            body = z.read(name)
            fast, exact = _scan_plain(body), _scan_exact(body)
            assert fast is not None, name   # what openpyxl writes takes the fast path
            assert (fast.max_row, fast.max_col) == (exact.max_row, exact.max_col), name


ANNOTATE = """
import json, resource, sys
from pathlib import Path
resource.setrlimit(resource.RLIMIT_AS, (2 * 1024 ** 3, 2 * 1024 ** 3))
from auditor.catalogue import load_profile
from auditor.audit import audit_path
from auditor.report.excel_report import write_annotated
status = {}
for name in sys.argv[3:]:
    source = Path(sys.argv[1]) / name
    try:
        write_annotated(audit_path(source, load_profile()), source, Path(sys.argv[2]) / "a.xlsx")
        status[name] = "ok"
    except BaseException as exc:   # MemoryError under the cap, among others
        status[name] = f"{type(exc).__name__}: {exc}"[:300]
print(json.dumps(status))
"""
HOSTILE_WORKBOOKS = [n for n in sorted(make_hostile.EXPECTED) if n.endswith(".xlsx")]


@pytest.fixture(scope="module")
def annotated_status(hostile_run, tmp_path_factory):
    status = {}
    # The far cell in a process of its own (a MemoryError leaves a process unfit
    # for the others); both processes run at once.
    procs = [subprocess.Popen([sys.executable, "-c", ANNOTATE, str(hostile_run[0]),
                               str(tmp_path_factory.mktemp("annotated")), *names], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env={**os.environ, "PYTHONPATH": str(ROOT)})
             for names in ([n for n in HOSTILE_WORKBOOKS if n != "far-cell.xlsx"], ["far-cell.xlsx"])]
    for proc in procs:
        out, err = proc.communicate(timeout=900)
        assert proc.returncode == 0, err[-1500:]
        status.update(json.loads(out.strip().splitlines()[-1]))
    return status


@pytest.mark.slow
@pytest.mark.subprocess
@pytest.mark.parametrize("name", HOSTILE_WORKBOOKS)
def test_annotated_workbook_of_a_hostile_workbook_stays_within_memory(annotated_status, name):
    """The reader refuses these workbooks before parsing them; the annotated
    workbook must not then parse them itself (2 GB cap here)."""
    assert annotated_status[name] == "ok"


@pytest.mark.parametrize("eol", ["\n", "\r\n", "\r"])
def test_blank_lines_keep_source_row_numbers_whatever_the_line_ending(eol):
    from auditor.read.csv_folder import parse_csv_text

    text = eol.join(["a;b", "1;2", "", "3;x", " ", "4;y", ""])
    table, _ = parse_csv_text("mises", text)
    assert table.df["_row"].tolist() == [2, 4, 6]
    assert table.rows_read == 3


@pytest.mark.parametrize("seen, written, most", [
    (0, 0, 10), (5, 5, 10), (5, 9, 10), (5, 10, 10), (5, 20, 10), (9, 9, 10), (10, 10, 10), (10, 30, 10),
    (20, 20, 10), (20, 3, 10), (5, 3, 10)])
def test_a_file_read_whole_as_it_is_when_read_whatever_its_size_when_looked_at(tmp_path, seen, written, most):
    """csv_folder._read_whole: a file that grew or shrank between the look at
    its size (`seen`) and the read gives its bytes as they are then, at most
    `most` of them (more: the caller refuses it as too large)."""
    from auditor.read.csv_folder import _read_whole

    data = bytes(range(65, 65 + written))
    path = tmp_path / "t.csv"
    path.write_bytes(data)
    with path.open("rb") as fh:
        got = _read_whole(fh, seen, most)
    assert bytes(got) == data[:most] and got.is_mutable
