"""`ecarte-audit generate` and `template`: synthetic carnets and table archives (checked to give the
breaches announced), the blank carnet workbook."""

from __future__ import annotations

import sys
from pathlib import Path

from auditor.commands import DOCUMENT_LANG, EXIT_OK
from auditor.errors import UsageError, os_reason
from auditor.i18n import cli_label


def cmd_template(args) -> int:
    """`ecarte-audit template`: a blank carnet workbook (.xlsx or .ods) in the right format."""
    out = args.out if args.out.suffix else args.out.with_suffix(".xlsx")
    if out.suffix.lower() == ".ods":
        from auditor.report.template_ods import write_blank_template
    elif out.suffix.lower() in (".xlsx", ".xlsm"):
        from auditor.report.template_xlsx import write_blank_template
    else:
        raise UsageError("template.bad_suffix", out=out)
    try:
        write_blank_template(out, args.lang or DOCUMENT_LANG)
    except OSError as exc:
        raise UsageError("main.cannot_write", path=out, reason=os_reason(exc)) from None
    print(cli_label("template.written", args.ui, out=out), file=sys.stderr)
    return EXIT_OK


def cmd_generate(args) -> int:
    """`ecarte-audit generate`: a synthetic carnet, compliant or with the chosen breaches."""
    from auditor.synth.breaches import CannotInject, inject
    from auditor.synth.generate import Spec, generate, write_csv_folder, write_xlsx

    if args.archive:
        return _generate_archive(args)
    container = args.container or ("xlsx" if args.out.suffix.lower() in (".xlsx", ".xlsm") else "csv")
    spec = Spec(seances=args.seances, coups=args.coups, mises=args.mises, seed=args.seed,
                casino=args.casino, table=args.table, chouette=args.chouette)
    tables = generate(spec)
    codes = [c.strip().upper() for c in args.breaches.split(",") if c.strip()]
    try:
        expected = inject(tables, codes, seed=args.seed) if codes else set()
    except CannotInject as exc:
        raise UsageError(exc.args[0]) from None
    try:
        if container == "xlsx":
            out = args.out if args.out.suffix else args.out.with_suffix(".xlsx")
            write_xlsx(tables, out)
        else:
            out = write_csv_folder(tables, args.out)
    except OSError as exc:
        raise UsageError("main.cannot_write", path=args.out, reason=os_reason(exc)) from None
    if expected:
        _check_breaches(out, expected)
    n = {k: len(v) for k, v in tables.items()}
    print(cli_label("generate.written", args.ui, out=out, seances=n["seances"], coups=n["coups"], mises=n["mises"],
                    tickets=n["tickets"])
          + (cli_label("generate.breaches_expected", args.ui, codes=", ".join(sorted(expected))) if expected else ""),
          file=sys.stderr)
    return EXIT_OK


def _generate_archive(args) -> int:
    """`generate OUT --archive N`: a table's successive daily carnets under OUT,
    with the chosen breaches across carnets, checked before they are left there."""
    import shutil

    from auditor.synth.archive import ArchiveSpec, generate_archive, write_archive
    from auditor.synth.breaches import CannotInject
    from auditor.synth.generate import Spec

    codes = tuple(c.strip().upper() for c in args.breaches.split(",") if c.strip())
    base = Spec(seances=args.seances, coups=args.coups, mises=args.mises, seed=args.seed, casino=args.casino,
                table=args.table, chouette=args.chouette,
                ticket_start={10: 400001, 100: 400001, 1000: 400001})
    try:
        carnets = generate_archive(ArchiveSpec(args.archive, base, codes))
    except CannotInject as exc:
        raise UsageError(exc.args[0]) from None
    existed = args.out.exists()
    try:
        paths = write_archive(carnets, args.out, args.container or "csv")
    except OSError as exc:
        raise UsageError("main.cannot_write", path=args.out, reason=os_reason(exc)) from None
    found = _archive_codes(paths)
    if found != set(codes):
        for path in paths:
            shutil.rmtree(path) if path.is_dir() else path.unlink()
        if not existed:
            shutil.rmtree(args.out, ignore_errors=True)
        raise UsageError("generate.archive_not_delivered", asked=", ".join(sorted(codes)) or "-",
                         found=", ".join(sorted(found)) or "-")
    print(cli_label("generate.archive_written", args.ui, out=args.out, n=len(paths), table=args.table,
                    first=carnets[0][0].isoformat(), last=carnets[-1][0].isoformat())
          + (cli_label("generate.breaches_expected", args.ui, codes=", ".join(sorted(codes))) if codes else ""),
          file=sys.stderr)
    return EXIT_OK


def _archive_codes(paths: list[Path]) -> set[str]:
    """The codes of the rules across carnets that the written archive gives."""
    from auditor.catalogue import load_profile
    from auditor.checks.archive import archive_codes
    from auditor.derived.batch_facts import batch_facts
    from auditor.normalise import normalise
    from auditor.read import read_carnet
    from auditor.checks import registered_batch

    profile = load_profile()
    batch = [batch_facts(normalise(read_carnet(p)), str(i), p.name, profile) for i, p in enumerate(paths)]
    return {code for code in archive_codes() if any(True for _ in registered_batch()[code].func(batch, profile))}


def _check_breaches(out: Path, expected: set[str]) -> None:
    """The carnet written gives exactly the codes announced, or it is removed and
    the combination refused: breaches made one after the other can undo or
    add to each other (a later one renumbering what an earlier one broke)."""
    import shutil

    from auditor.catalogue import load_profile
    from auditor.model import Severity
    from auditor.audit import audit_path

    found = {f.code for f in audit_path(out, load_profile()).findings if f.severity >= Severity.WARNING}
    if found == expected:
        return
    shutil.rmtree(out) if out.is_dir() else out.unlink()
    undone, more = ", ".join(sorted(expected - found)), ", ".join(sorted(found - expected))
    if undone and more:
        raise UsageError("generate.not_together_both", undone=undone, more=more)
    if undone:
        raise UsageError("generate.not_together_undone", undone=undone)
    raise UsageError("generate.not_together_more", more=more)
