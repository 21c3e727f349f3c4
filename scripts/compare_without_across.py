"""Compare two `compare_outputs.py --keep` folders across the change that put
findings across carnets in each carnet's files (outputs.md v1.2): the
outputs after, with the findings that have `across` taken out (and what they
count in each summary), equal the outputs before; summary.json's findings
across carnets match before's one for one; every report.html and index.html
is identical.

    python scripts/compare_without_across.py BEFORE_KEEP AFTER_KEEP
"""
import json
import sys
from pathlib import Path

B, A = Path(sys.argv[1]), Path(sys.argv[2])
KEYS = {"error": "errors", "warning": "warnings", "info": "info"}
diff = same = crossed = 0
for fa in sorted(A.glob("*/*/*/findings.json")):
    rel = fa.relative_to(A)
    fb = B / rel
    a, b = json.loads(fa.read_text()), json.loads(fb.read_text())
    x = [f for f in a["findings"] if "across" in f]
    crossed += bool(x)
    a["findings"] = [f for f in a["findings"] if "across" not in f]
    for f in x:
        a["summary"][KEYS[f["severity"]]] -= 1
        a["summary"]["impact_cents"] -= max(f["impact_cents"], 0)
    if a == b:
        same += 1
    else:
        diff += 1
        print("differs:", rel)
print("findings.json: same", same, "diff", diff, "with findings across", crossed)
for sa in sorted(A.glob("*/*/summary.json")):
    a, b = json.loads(sa.read_text()), json.loads((B / sa.relative_to(A)).read_text())
    assert a["totals"] == b["totals"], (sa, a["totals"], b["totals"])
    for ea, eb in zip(a["carnets"], b["carnets"]):
        cc = ea["cross_carnet"]
        for k in ("errors", "warnings", "info", "impact_cents"):
            ea["summary"][k] -= cc[k]
        assert ea == eb, (sa, ea["id"])
    assert len(a["cross_carnet_findings"]) == len(b["cross_carnet_findings"])
    for fa_, fb_ in zip(a["cross_carnet_findings"], b["cross_carnet_findings"]):
        assert (fa_["code"], fa_["message"], fa_["impact_cents"]) == (fb_["code"], fb_["message"], fb_["impact_cents"]), (fa_, fb_)
        assert [(p["carnet"], p["seance"], p["coup"], p["row"]) for p in fa_["across"]] == \
               [(c["id"], c["seance"], c["coup"], c["row"]) for c in fb_["carnets"]]
print("summary.json: rows, totals and findings across carnets equal")
n = 0
for name in ("report.html", "index.html"):
    for fa in sorted(A.glob(f"**/{name}")):
        if "input" in fa.parts:
            continue
        assert fa.read_bytes() == (B / fa.relative_to(A)).read_bytes(), fa
        n += 1
print("html identical:", n)
sys.exit(1 if diff else 0)
