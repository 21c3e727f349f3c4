"""The command line: exit statuses, files written, findings.json shape, bad input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.cli import main

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_carnets"
GOOD_XLSX = SAMPLES / "compliant" / "forges-table3.xlsx"
GOOD_CSV = SAMPLES / "compliant" / "forges-table5"
BAD = SAMPLES / "infractions" / "prelevements"


def run_cli(*args) -> tuple[int, str]:
    proc = subprocess.run([sys.executable, "-m", "auditor", *map(str, args)], capture_output=True, text=True,
                          env={**os.environ, "SOURCE_DATE_EPOCH": "1767225600"})
    return proc.returncode, proc.stderr


def test_compliant_carnet_exits_0(tmp_path):
    assert main(["audit", str(GOOD_XLSX), "--out", str(tmp_path), "--quiet"]) == 0
    assert (tmp_path / "forges-table3.xlsx" / "findings.json").exists()
    assert (tmp_path / "forges-table3.xlsx" / "report.html").exists()
    assert not (tmp_path / "index.html").exists()  # one carnet is not a batch


def test_breaches_exit_1_unless_fail_on_never(tmp_path):
    assert main(["audit", str(BAD), "--out", str(tmp_path), "--quiet"]) == 1
    assert main(["audit", str(BAD), "--out", str(tmp_path), "--quiet", "--fail-on", "never"]) == 0


def test_fail_on_warning(tmp_path):
    warn_only = SAMPLES / "infractions" / "masses-et-totaux"
    assert main(["audit", str(warn_only), "--out", str(tmp_path), "--quiet", "--fail-on", "warning"]) == 1


def test_findings_json_shape(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    main(["audit", str(BAD), "--out", str(tmp_path), "--quiet", "--format", "json"])
    doc = json.loads((tmp_path / "prelevements" / "findings.json").read_text(encoding="utf-8"))
    assert list(doc) == ["schema_version", "tool", "generated_at", "source", "carnet", "profile", "summary",
                         "rules", "findings", "reading", "absent", "orphan_reviews"]
    assert doc["generated_at"] == "2026-01-01T00:00:00Z"
    assert doc["tool"] == {"name": "ecarte-auditor", "version": "0.1.0"}
    assert doc["source"]["format"] == "csv" and len(doc["source"]["sha256"]) == 64
    assert doc["profile"] == {"name": "arrete-2007", "levy_rate": "0.05", "tie_rounding": "up"}
    assert list(doc["summary"]) == ["errors", "warnings", "info", "seances", "coups", "mises", "tickets",
                                    "rows_read", "rows_rejected", "rows_left_out", "levy_expected_cents",
                                    "levy_recorded_cents", "impact_cents", "formulas", "tables"]
    spec_codes = [r["code"] for r in doc["rules"]]
    assert len(spec_codes) == len(set(spec_codes)) == 43
    assert all(r["status"] in ("checked", "not_checked") for r in doc["rules"])
    assert all("reason" in r for r in doc["rules"] if r["status"] == "not_checked")
    f = doc["findings"][0]
    assert list(f) == ["code", "severity", "article", "message", "seance", "coup", "rang", "table", "row",
                       "column", "cell", "expected", "found", "impact_cents", "fingerprint", "baseline_state",
                       "review"]
    assert not (tmp_path / "prelevements" / "report.html").exists()
    keys = [((x["seance"] or 0), (x["coup"] or 0), (x["rang"] or 0), x["code"]) for x in doc["findings"]]
    assert keys == sorted(keys)

    def no_float(node):
        if isinstance(node, float):
            raise AssertionError(f"float in findings.json: {node}")
        if isinstance(node, dict):
            for v in node.values():
                no_float(v)
        if isinstance(node, list):
            for v in node:
                no_float(v)
    no_float(doc)


@pytest.mark.subprocess
@pytest.mark.slow
def test_outputs_are_byte_identical(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCE_DATE_EPOCH", "1767225600")
    for out in ("a", "b"):
        assert main(["audit", str(SAMPLES), "--out", str(tmp_path / out), "--quiet", "--fail-on", "never"]) == 0
    files_a = sorted(p.relative_to(tmp_path / "a") for p in (tmp_path / "a").rglob("*") if p.is_file())
    files_b = sorted(p.relative_to(tmp_path / "b") for p in (tmp_path / "b").rglob("*") if p.is_file())
    assert files_a == files_b and files_a
    for rel in files_a:
        assert (tmp_path / "a" / rel).read_bytes() == (tmp_path / "b" / rel).read_bytes(), rel


@pytest.mark.subprocess
@pytest.mark.slow
def test_batch_writes_index_and_summary(tmp_path):
    assert main(["audit", str(SAMPLES), "--out", str(tmp_path), "--quiet"]) == 1
    summary = json.loads((tmp_path / "summary.json").read_text(encoding="utf-8"))
    ids = [c["id"] for c in summary["carnets"]]
    assert ids == sorted(ids) and "compliant__forges-table3.xlsx" in ids and "infractions__prelevements" in ids
    assert (tmp_path / "index.html").exists()
    assert len(ids) == len(list(tmp_path.glob("*/findings.json")))
    assert summary["cross_carnet_findings"] == []  # each table of a casino has its own ticket books


def test_english_report(tmp_path):
    main(["audit", str(BAD), "--out", str(tmp_path), "--quiet", "--lang", "en"])
    doc = json.loads((tmp_path / "prelevements" / "findings.json").read_text(encoding="utf-8"))
    assert doc["findings"][0]["message"].startswith("Levy of")
    assert 'lang="en"' in (tmp_path / "prelevements" / "report.html").read_text(encoding="utf-8")


@pytest.mark.subprocess
@pytest.mark.parametrize("maker", ["random_bytes", "headers_only", "missing_column"])
def test_not_a_carnet_exits_1_with_ec00_and_one_line(tmp_path, maker):
    if maker == "random_bytes":
        target = tmp_path / "in" / "carnet.xlsx"
        target.parent.mkdir()
        target.write_bytes(os.urandom(4096))
    else:
        target = tmp_path / "in" / "carnet"
        target.mkdir(parents=True)
        heads = {"carnet": "casino;table;date_debut", "seances": "seance;date", "coups":
                 "seance;coup;type;joueur_a;joueur_b;total_a;total_b;gagnant;prelevement",
                 "mises": "seance;coup;rang;fiche;cote;montant", "tickets": "seance;coup;valeur;premier"}
        if maker == "missing_column":
            heads["mises"] = "seance;coup;rang;fiche;cote"
            heads["carnet"] += "\nCasino;1;01/03/2026"
        for name, text in heads.items():
            (target / f"{name}.csv").write_text(text + "\n", encoding="utf-8")
    code, err = run_cli("audit", target, "--out", tmp_path / "out", "--format", "json")
    assert code == 1
    assert "Traceback" not in err
    doc = json.loads(next((tmp_path / "out").rglob("findings.json")).read_text(encoding="utf-8"))
    assert any(f["code"] == "EC00-01" for f in doc["findings"])
    assert len(err.strip().splitlines()) == 1


@pytest.mark.subprocess
@pytest.mark.parametrize("args", [
    ["audit", "/nonexistent/carnet.xlsx"],
    ["audit", "{empty}"],
    ["audit", "{good}", "--format", "docx"],
    ["audit", "{good}", "--bogus"],
    ["audit", "{good}", "--out", "/proc/forbidden"],
    ["audit", "{good}", "--out", "{empty}", "--cache", "/proc/forbidden"],   # a cache it cannot write: said first
    ["rules", "--explain", "EC99-99"],
])
def test_usage_errors_exit_2(tmp_path, args):
    (tmp_path / "empty").mkdir()
    args = [a.format(empty=tmp_path / "empty", good=GOOD_CSV) for a in args]
    code, err = run_cli(*args)
    assert code == 2, err
    assert "Traceback" not in err and err.strip()
    if "--cache" in args:
        [line] = err.strip().splitlines()
        assert line.startswith("ecarte-audit: ") and "/proc/forbidden" in line, err
        assert not any((tmp_path / "empty").iterdir())   # nothing audited, nothing written


@pytest.mark.parametrize("options", [["--fail-on-new"], ["--sign", "key.p12"], ["--sign", "key.p12", "--format", "html"]],
                         ids=["fail-on-new-without-baseline", "sign-without-pdf", "sign-with-html-only"])
def test_contradictory_options_are_refused_before_anything_is_made(tmp_path, capsys, options):
    """A usage error leaves no trace: the --out folder it names is not made."""
    out = tmp_path / "reports"
    assert main(["audit", str(GOOD_CSV), "--out", str(out), "--lang", "en", *options]) == 2
    [line] = capsys.readouterr().err.strip().splitlines()
    assert line.startswith("ecarte-audit: ") and ("--baseline" in line or "pdf" in line), line
    assert not out.exists()


def test_rules_lists_and_explains(capsys):
    assert main(["rules"]) == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 43 and "EC64-01" in out
    assert main(["rules", "--explain", "ec66-01"]) == 0
    out = capsys.readouterr().out
    assert "Art. 66" in out and "Why:" in out
    assert main(["rules", "--explain", "EC64-01", "--lang", "en"]) == 0
    assert "Coup numbering interrupted" in capsys.readouterr().out


def test_html_report_is_self_contained(tmp_path):
    main(["audit", str(BAD), "--out", str(tmp_path), "--quiet"])
    html = (tmp_path / "prelevements" / "report.html").read_text(encoding="utf-8")
    assert "http://" not in html and "https://" not in html and "<script src" not in html
    assert "EC66-01" in html and "Carnet non conforme" in html


def test_xlsx_format_and_template_command(tmp_path):
    from openpyxl import load_workbook

    assert main(["audit", str(BAD), "--out", str(tmp_path), "--quiet", "--format", "xlsx,json"]) == 1
    book = load_workbook(tmp_path / "prelevements" / "annotated.xlsx")
    assert book.sheetnames[0] and "coups" in [n.lower() for n in book.sheetnames]
    assert not (tmp_path / "prelevements" / "report.html").exists()
    assert main(["template", str(tmp_path / "blank")]) == 0
    blank = load_workbook(tmp_path / "blank.xlsx")
    assert {"carnet", "seances", "coups", "mises", "tickets"} <= {n.lower() for n in blank.sheetnames}
    assert main(["template", "/proc/forbidden/blank.xlsx"]) == 2


@pytest.mark.subprocess
def test_limits_are_options(tmp_path):
    code, err = run_cli("audit", GOOD_CSV, "--out", tmp_path, "--format", "json", "--max-rows", "50")
    assert code == 1 and "Traceback" not in err
    doc = json.loads((tmp_path / "forges-table5" / "findings.json").read_text(encoding="utf-8"))
    assert any(f["code"] == "EC00-01" and f["table"] == "mises" for f in doc["findings"])
    assert run_cli("audit", GOOD_CSV, "--out", tmp_path, "--max-columns", "0")[0] == 2


@pytest.mark.slow
@pytest.mark.subprocess
def test_console_entry_flushes_and_runs_exit_handlers_before_its_prompt_exit(tmp_path):
    """`run` ends the process without freeing its objects one by one: what
    was printed (even into a pipe), the exit handlers (temporary folders) and
    the exit status must still all be there."""
    code = ("import atexit, sys, tempfile\n"
            "from auditor import cli\n"
            "folder = tempfile.TemporaryDirectory()\n"
            "print(folder.name, flush=True)\n"
            "atexit.register(lambda: print('handler ran'))\n"
            "sys.argv = ['ecarte-audit'] + sys.argv[1:]\n"
            "cli.run()\n")
    rules = subprocess.run([sys.executable, "-c", code, "rules", "--lang", "en"], capture_output=True, text=True)
    lines = rules.stdout.splitlines()
    assert rules.returncode == 0, rules.stderr
    assert lines[-1] == "handler ran"
    assert sum(line.startswith("EC") for line in lines) == 43
    assert not Path(lines[0]).exists(), "the temporary folder's finalizer did not run"
    audit = subprocess.run([sys.executable, "-c", code, "audit", str(BAD), "--out", str(tmp_path), "--quiet"],
                           capture_output=True, text=True)
    assert audit.returncode == 1 and audit.stdout.splitlines()[-1] == "handler ran", audit.stderr


@pytest.mark.subprocess
def test_a_profiled_run_keeps_its_profile(tmp_path):
    """Under cProfile (or coverage) the command exits the ordinary way, so the
    profiler can write what it saw once the program returns."""
    stats = tmp_path / "rules.prof"
    done = subprocess.run([sys.executable, "-m", "cProfile", "-o", str(stats), "-m", "auditor", "rules"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert stats.stat().st_size > 0


_BLAS_HOOK = '''
import os, sys
from pathlib import Path

def record(job, retry):
    """Before each audit, in the process that audits it: what OpenBLAS was told."""
    seen = os.environ.get("OPENBLAS_NUM_THREADS", "unset")
    Path(os.environ["ECARTE_TEST_SEEN"], f"{job.path.name}-{os.getpid()}").write_text(seen)
'''


@pytest.mark.subprocess
@pytest.mark.parametrize("chosen", [None, "2"], ids=["default", "the-users-choice"])
@pytest.mark.parametrize("carnets", [1, 2], ids=["one-carnet", "a-batch"])
def test_the_command_and_its_workers_run_openblas_on_one_thread(tmp_path, chosen, carnets):
    """numpy's OpenBLAS spins a thread per core up when numpy is loaded (0.2 s
    of CPU per process on two cores), for linear algebra the audit never
    does: the console command sets one thread before numpy is loaded, in its
    own process (one carnet) and in its workers (a batch), unless the user
    chose a number. As an inspector runs it: the console script, a real
    environment."""
    from auditor.batch.executors import AUDIT_HOOK_ENV

    (tmp_path / "site").mkdir()
    (tmp_path / "site" / "blas_hook.py").write_text(_BLAS_HOOK)
    seen = tmp_path / "seen"
    seen.mkdir()
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "SOURCE_DATE_EPOCH")}
    env.update({AUDIT_HOOK_ENV: "blas_hook:record", "ECARTE_TEST_SEEN": str(seen),
                "PYTHONPATH": os.pathsep.join([str(tmp_path / "site"), str(ROOT)])})
    if chosen:
        env["OPENBLAS_NUM_THREADS"] = chosen
    target = BAD if carnets == 1 else SAMPLES / "infractions"
    proc = subprocess.Popen([sys.executable, "-m", "auditor", "audit", str(target), "--out", str(tmp_path / "out"),
                             "--quiet", "--jobs", "2"], stderr=subprocess.PIPE, text=True, env=env)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 1, err
    records = {int(p.name.rsplit("-", 1)[1]): p.read_text() for p in seen.iterdir()}
    assert records and set(records.values()) == {chosen or "1"}, records
    # One carnet is audited in the command's process, a batch in its workers.
    assert (set(records) == {proc.pid}) if carnets == 1 else (proc.pid not in records), (proc.pid, records)


@pytest.mark.subprocess
def test_the_console_entry_is_reached_before_numpy_is_loaded():
    """What `python -m auditor` (and the console script) imports before `run`
    sets OpenBLAS's threads loads no numpy: OpenBLAS reads the setting once,
    when numpy loads it."""
    probe = ("import runpy, sys\nfrom auditor import cli\nset_it = cli.one_blas_thread\n"
             "cli.one_blas_thread = lambda: print('numpy' in sys.modules) or set_it()\n"
             "sys.argv = ['ecarte-audit', 'rules']\nrunpy.run_module('auditor', run_name='__main__')\n")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "False"
