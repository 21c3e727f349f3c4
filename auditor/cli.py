"""`ecarte-audit`: audit carnets, list and explain the rules.

Exit status (outputs.md): 0 nothing at or above --fail-on, 1 something is,
2 usage error (bad option, a PATH that does not exist or holds no carnet,
an output folder that cannot be written).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from auditor import __version__
from auditor.catalogue import load_catalogue, load_profile
from auditor.model import Severity

EXIT_OK, EXIT_FINDINGS, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    pass


def _formats(text: str) -> tuple[str, ...]:
    from auditor.pipeline import FORMATS

    chosen = tuple(dict.fromkeys(p.strip().lower() for p in text.split(",") if p.strip()))
    unknown = [f for f in chosen if f not in FORMATS]
    if unknown or not chosen:
        raise argparse.ArgumentTypeError(f"unknown format(s) {', '.join(unknown) or text!r}; "
                                         f"choose among {', '.join(FORMATS)}")
    return chosen


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ecarte-audit", description="Audit écarté carnets spéciaux "
                                     "(arrêté du 14 mai 2007, art. 63 to 66-1).")
    parser.add_argument("--version", action="version", version=f"ecarte-auditor {__version__}")
    sub = parser.add_subparsers(dest="command", required=True)

    a = sub.add_parser("audit", help="audit carnets and write reports")
    a.add_argument("paths", nargs="+", type=Path, metavar="PATH",
                   help="an .xlsx workbook, a CSV-folder carnet, or a folder of carnets")
    a.add_argument("--out", type=Path, default=Path("reports"), help="output folder (default: reports/)")
    a.add_argument("--format", type=_formats, default=("html", "json"), help="html,json (default: html,json)")
    a.add_argument("--fail-on", choices=("error", "warning", "never"), default="error",
                   help="lowest severity that makes the exit status 1 (default: error)")
    a.add_argument("--jobs", type=int, default=1, help="carnets audited in parallel")
    a.add_argument("--lang", choices=("fr", "en"), default="fr", help="report language (default: fr)")
    a.add_argument("--quiet", action="store_true", help="print nothing but errors")
    a.add_argument("--debug", action="store_true", help=argparse.SUPPRESS)

    r = sub.add_parser("rules", help="list the rule catalogue, or explain one rule")
    r.add_argument("--explain", metavar="CODE", help="explain one rule, e.g. EC64-01")
    r.add_argument("--lang", choices=("fr", "en"), default="fr")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.command == "rules":
            return cmd_rules(args)
        return cmd_audit(args)
    except UsageError as exc:
        print(f"ecarte-audit: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("ecarte-audit: interrupted", file=sys.stderr)
        return 130


def cmd_rules(args) -> int:
    from auditor.registry import registered

    catalogue = load_catalogue()
    checks = registered()
    lang = args.lang
    if args.explain:
        code = args.explain.strip().upper()
        meta = catalogue.get(code)
        if meta is None:
            raise UsageError(f"unknown rule code {args.explain!r} (see 'ecarte-audit rules')")
        spec = checks.get(code)
        print(f"{meta.code} — art. {meta.article} — {meta.severity.label}")
        print(meta.title[lang])
        print()
        print(meta.explain[lang])
        if spec is not None:
            doc = (spec.func.__doc__ or "").strip()
            if doc:
                print()
                print("\n".join(line.strip() for line in doc.splitlines()))
            if spec.needs:
                print()
                print(("Nécessite : " if lang == "fr" else "Needs: ") + ", ".join(spec.needs))
        else:
            print()
            print("(" + ("pas encore implémentée" if lang == "fr" else "not implemented yet") + ")")
        return EXIT_OK
    width = max(len(c) for c in catalogue)
    for code, meta in catalogue.items():
        mark = "" if code in checks else ("  [non implémentée]" if lang == "fr" else "  [not implemented]")
        print(f"{code:<{width}}  {meta.article:<5} {meta.severity.label:<8} {meta.title[lang]}{mark}")
    return EXIT_OK


def cmd_audit(args) -> int:
    from auditor.pipeline import audit_path, plan, write_batch, write_outputs
    from auditor.report.json_report import generated_at

    for p in args.paths:
        if not p.exists():
            raise UsageError(f"{p}: no such file or folder")
    jobs = plan(args.paths)
    if not jobs:
        raise UsageError(f"no carnet found in {', '.join(str(p) for p in args.paths)} "
                         "(an .xlsx workbook or a folder holding coups.csv)")
    try:
        args.out.mkdir(parents=True, exist_ok=True)
        probe = args.out / ".ecarte-audit-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise UsageError(f"cannot write to output folder {args.out}: {exc.strerror or exc}") from None
    profile = load_profile()
    threshold = None if args.fail_on == "never" else Severity.parse(args.fail_on)
    entries, failing = [], 0
    for job in jobs:
        result = audit_path(job.path, profile, args.lang, debug=args.debug)
        entries.append(write_outputs(result, job, args.out, args.format, profile))
        worst = result.worst()
        if threshold is not None and worst is not None and worst >= threshold:
            failing += 1
        if not args.quiet:
            s = result.summary
            print(f"{job.shown}: {s['errors']} error(s), {s['warnings']} warning(s), {s['info']} info "
                  f"→ {args.out / job.id}", file=sys.stderr)
    batch = len(jobs) > 1 or any(p.is_dir() and len(jobs) and jobs[0].path != p for p in args.paths)
    if batch:
        write_batch(entries, args.out, args.format, args.lang, generated_at())
    return EXIT_FINDINGS if failing else EXIT_OK


if __name__ == "__main__":
    raise SystemExit(main())
