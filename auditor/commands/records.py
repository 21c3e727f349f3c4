"""`ecarte-audit rules`, `review`, `history`, `verify` and `serve`: the catalogue, decisions on findings,
the findings history, a procès-verbal checked, the local page."""

from __future__ import annotations

import sys

from auditor.catalogue import load_catalogue
from auditor.commands import DOCUMENT_LANG, EXIT_FINDINGS, EXIT_OK, say
from auditor.errors import Message, UsageError, os_reason
from auditor.i18n import cli_label


def cmd_rules(args) -> int:
    """`ecarte-audit rules`: the catalogue, or one rule explained."""
    from auditor.i18n import label
    from auditor.checks import registered

    catalogue = load_catalogue()
    checks = registered()
    lang = args.ui   # terminal text: the terminal's language (--lang, else the locale)

    def severity(meta) -> str:   # the reports' word for it
        return label(meta.severity.label, lang).lower()

    if args.explain:
        code = args.explain.strip().upper()
        meta = catalogue.get(code)
        if meta is None:
            raise UsageError("rules.unknown_code", code=args.explain)
        spec = checks.get(code)
        print(f"{meta.code} — art. {meta.article} — {severity(meta)}")
        print(meta.title[lang])
        print()
        print(meta.explain[lang])
        if spec is not None:
            # The check's docstring (its examples of compliant and non-compliant
            # carnets) is English, as the code is: shown to English readers; the
            # catalogue's explanation above is the rule in either language.
            doc = (spec.func.__doc__ or "").strip() if lang == "en" else ""
            if doc:
                print()
                print("\n".join(line.strip() for line in doc.splitlines()))
            if spec.needs:
                print()
                print(cli_label("rules.needs", lang) + ", ".join(spec.needs))
        else:
            print()
            print(f"({label('not_implemented', lang)})")
        return EXIT_OK
    width = max(len(c) for c in catalogue)
    sev_width = max(len(severity(m)) for m in catalogue.values())
    for code, meta in catalogue.items():
        mark = "" if code in checks else cli_label("rules.not_implemented_mark", lang)
        print(f"{code:<{width}}  {meta.article:<5} {severity(meta):<{sev_width}} {meta.title[lang]}{mark}")
    return EXIT_OK


def cmd_review(args) -> int:
    """`ecarte-audit review`: record a decision on one finding, by its fingerprint."""
    from auditor.reviews import ACKNOWLEDGED, FILE_NAME, STATUS_TEXT, ReviewError, record_review
    from auditor.baseline import find_finding, still_found

    carnet_id, folder, finding = find_finding(args.out, args.fingerprint)
    target = args.reviews or folder / FILE_NAME
    try:
        entry = record_review(target, finding["fingerprint"], args.status, args.comment, args.by,
                              carnet=carnet_id, finding=finding)
    except ReviewError as exc:
        raise UsageError(exc.args[0]) from None
    except OSError as exc:
        raise UsageError("main.cannot_write", path=target, reason=os_reason(exc)) from None
    where = (", " + cli_label("review.where", args.ui, seance=entry["seance"], coup=entry["coup"])
             if entry["seance"] is not None else "")
    print(cli_label("review.recorded", args.ui, fingerprint=entry["fingerprint"], code=entry["code"], where=where,
                    status=STATUS_TEXT[args.ui].get(entry["status"], entry["status"]), by=entry["by"], target=target),
          file=sys.stderr)
    if entry["status"] == ACKNOWLEDGED and still_found(folder, entry["fingerprint"]):
        # `corrige` is for a finding that is gone; OUT may be the last run that saw it (its
        # carnet vanished since), which lists it as present: recorded, and said.
        say(Message("review.corrige_still_found", fingerprint=entry["fingerprint"], out=args.out,
                    carnet=carnet_id), args)
    return EXIT_OK


def cmd_verify(args) -> int:
    """`ecarte-audit verify`: the procès-verbal's signature, its attached findings and the sources' hashes."""
    from auditor.verify import verify

    verdict = verify(args.pdf, args.sources)
    for ok, message in verdict.lines:
        mark = cli_label("verify.holds", args.ui) if ok else cli_label("verify.fails", args.ui)
        print(f"{mark} {message.text(args.ui)}")
    failed = sum(1 for ok, _ in verdict.lines if not ok)
    print(cli_label("verify.all_hold", args.ui) if verdict.ok else cli_label("verify.some_fail", args.ui, n=failed))
    return EXIT_OK if verdict.ok else EXIT_FINDINGS


def cmd_history(args) -> int:
    """`ecarte-audit history`: answer a question on the findings history, or write its indicators."""
    from auditor.history import answer, parse_severities, readable_runs

    severities = parse_severities(args.severity)
    if args.folder.is_dir():
        for path in readable_runs(args.folder)[1]:
            print(cli_label("history.skipped", args.ui, path=path), file=sys.stderr)
    if args.formats is not None and args.html is None:
        raise UsageError("history.format_needs_html")
    if args.html is not None:
        from auditor.indicators import parse_formats, write_indicators

        formats = parse_formats(args.formats)
        written = write_indicators(args.folder, args.html, args.lang or DOCUMENT_LANG, formats)
        for path in written:
            print(cli_label("history.written", args.ui, path=path), file=sys.stderr)
        return EXIT_OK
    if args.sql is not None and (args.view or severities or args.older_than is not None):
        raise UsageError("history.sql_alone")
    print(answer(args.folder, args.ui, since=args.open_since, sql=args.sql, view=args.view, severities=severities,
                 older_than=args.older_than), end="")
    return EXIT_OK


def cmd_serve(args) -> int:
    """`ecarte-audit serve`: the local page, until Ctrl-C."""
    from dataclasses import replace

    from auditor.limits import DEFAULT_LIMITS, MB

    ui = args.ui
    try:
        from auditor.serve.server import serve
    except ImportError:
        raise UsageError("serve.needs_web") from None
    limits = replace(DEFAULT_LIMITS, max_file_bytes=args.max_file_mb * MB) if args.max_file_mb else None
    try:
        return serve(port=args.port, open_browser=not args.no_browser, lang=args.lang or DOCUMENT_LANG, ui=ui,
                     limits=limits, workers=args.jobs, reviews_file=args.reviews,
                     workspace=args.workspace,
                     keep_bytes=args.keep_mb * MB if args.keep_mb else None)
    except OSError as exc:
        raise UsageError("serve.port_taken", port=args.port or 0, reason=os_reason(exc)) from None


def cmd_shortcut(args) -> int:
    """`ecarte-audit shortcut`: the page in the applications menu and on the desktop (`--remove`: taken away)."""
    from auditor.serve import shortcut

    ui = args.ui
    try:
        done = shortcut.remove(ui) if args.remove else shortcut.add(ui)
    except NotImplementedError:
        raise UsageError("shortcut.unsupported") from None
    except OSError as exc:
        raise UsageError("shortcut.failed", reason=os_reason(exc)) from None
    key = "shortcut.removed" if args.remove else "shortcut.added"
    for path in done.paths:
        print(cli_label(key, ui, path=str(path)))
    if args.remove and not done.paths:
        print(cli_label("shortcut.nothing", ui))
    elif not args.remove:
        print(cli_label("shortcut.hint", ui, name=cli_label("shortcut.name", ui)))
    return EXIT_OK
