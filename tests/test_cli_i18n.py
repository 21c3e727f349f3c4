"""The command line speaks the user's language: help, messages and errors in
French under a French locale (LANG=fr_FR.UTF-8…), English otherwise, and
`--lang` wins. Every text comes from templates/i18n/cli.<lang>.toml; the
reports stay French unless `--lang en`, whatever the locale."""

from __future__ import annotations

import argparse
import ast
import os
import pickle
import re
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.cli import LocalizedParser, build_parser, chosen_lang, main
from auditor.errors import Message, UsageError, WriteError
from auditor.i18n import LANGS, argparse_words, cli_labels, environment_lang

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_carnets"
BAD = SAMPLES / "infractions" / "prelevements"
LOCALE_VARS = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")
COMMANDS = ("audit", "columns", "generate", "template", "review", "history", "rules", "serve")
# The installed console script, as a user types it (not `python -m auditor`).
SCRIPT = Path(sys.executable).with_name("ecarte-audit")


def run(args, cwd=None, **env_vars) -> subprocess.CompletedProcess:
    """`ecarte-audit` as a user runs it: their environment, with only the
    locale variables replaced by `env_vars`."""
    assert SCRIPT.exists(), f"{SCRIPT}: the console script is not installed (make .venv/.installed-test)"
    env = {k: v for k, v in os.environ.items() if k not in LOCALE_VARS}
    env.update(env_vars)
    return subprocess.run([str(SCRIPT), *map(str, args)], capture_output=True, text=True, env=env, cwd=cwd,
                          timeout=600)


def parsers(parser: argparse.ArgumentParser):
    """The parser and every sub-command's parser."""
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from parsers(sub)


@pytest.fixture
def locale(monkeypatch):
    """Set the locale of this process (in-process runs of main)."""
    def set_locale(**env_vars):
        for var in LOCALE_VARS:
            monkeypatch.delenv(var, raising=False)
        for var, value in env_vars.items():
            monkeypatch.setenv(var, value)
    return set_locale


# -- the label files ------------------------------------------------------------

def test_both_languages_have_the_same_keys_placeholders_and_different_words():
    fr, en = cli_labels("fr"), cli_labels("en")
    assert set(fr) == set(en), set(fr) ^ set(en)
    for key in fr:   # the same {placeholders} on both sides
        assert set(re.findall(r"\{(\w+)", fr[key])) == set(re.findall(r"\{(\w+)", en[key])), key
    # A French text copied from the English one is a translation forgotten;
    # only texts without words of their own (formats, codes) may be the same.
    same = [k for k in fr if fr[k] == en[k] and re.search(r"[a-zé]{4,}", re.sub(r"\{[^}]*\}|--[\w-]+", "", fr[k]))]
    assert same == ["review.where"]   # "séance {seance}, coup {coup}": the carnet's own words in both
    assert set(argparse_words("fr")) >= {"usage: ", "positional arguments", "options",
                                         "the following arguments are required: %s",
                                         "invalid choice: %(value)r (choose from %(choices)s)",
                                         "%(prog)s: error: %(message)s\n", "unrecognized arguments: %s"}
    assert argparse_words("en") == {}   # argparse's own English is left as it is


def test_argparse_words_keep_their_placeholders():
    for english, french in argparse_words("fr").items():
        assert re.findall(r"%\(\w+\)[sr]|%[sr]", english) == re.findall(r"%\(\w+\)[sr]|%[sr]", french), english


def test_every_help_is_a_label_in_both_languages():
    for lang in LANGS:
        texts = set(cli_labels(lang).values())
        seen = set()
        for p in parsers(build_parser(lang)):
            seen.add(p.prog)
            assert p.description in texts, (lang, p.prog, p.description)
            for action in p._actions:
                if action.help not in (None, argparse.SUPPRESS):
                    assert action.help in texts or any(
                        re.fullmatch(re.sub(r"\\\{\w+\\\}", ".+", re.escape(t)), action.help) for t in texts), \
                        (lang, p.prog, action.dest, action.help)
                if not isinstance(action, argparse._SubParsersAction):   # its commands have theirs
                    assert action.help is not None, (lang, p.prog, action.dest, "no help")
                for choice in getattr(action, "_choices_actions", []):
                    assert choice.help in texts, (lang, p.prog, choice.dest)
        assert {f"ecarte-audit {c}" for c in COMMANDS} <= seen


def test_every_command_has_a_lang_option():
    for p in parsers(build_parser("en")):
        if p.prog != "ecarte-audit":
            assert any("--lang" in a.option_strings for a in p._actions), p.prog


def test_a_help_that_is_not_a_key_is_refused_when_the_parser_is_built():
    parser = LocalizedParser(prog="x", lang="fr")
    with pytest.raises(ValueError, match="not a key of templates/i18n/cli.fr.toml"):
        parser.add_argument("--baseline", help="compare with an earlier run")


# -- every key the code names is in both files -----------------------------------

def _calls(names: set[str]):
    """(file, line, call) of every call to one of `names` in auditor/."""
    for path in sorted((ROOT / "auditor").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in names:
                yield path.relative_to(ROOT).as_posix(), node.lineno, node


def _passed_along(where: str, first) -> bool:
    """The mechanism itself passes a key or a message along (`UsageError(exc.args[0])`…)."""
    return (where in ("auditor/errors.py", "auditor/cli.py") or where.startswith("auditor/commands/")) \
        and not isinstance(first, ast.Constant)


def test_every_message_key_the_code_names_is_in_both_files():
    keys = set(cli_labels("fr")) & set(cli_labels("en"))
    errors = {"UsageError", "WriteError", "WorkerStartError"}
    calls = list(_calls(errors | {"Message", "cli_label", "_type_error"}))
    assert len(calls) > 60
    for where, line, call in calls:
        first = call.args[0] if call.args else None
        if _passed_along(where, first):
            continue
        if getattr(call.func, "id", None) == "cli_label" and isinstance(first, (ast.Name, ast.Subscript)):
            continue   # a key from a table of keys: see test_every_key_written_anywhere_in_the_code_is_in_both_files
        if isinstance(first, ast.Call) and getattr(first.func, "id", None) in ("Message", "write_failure"):
            continue   # a Message, checked as a call of its own (write_failure's is in atomic.py)
        assert isinstance(first, ast.Constant) and isinstance(first.value, str), \
            f"{where}:{line}: give a key of cli.*.toml, not a built text"
        assert first.value in keys, f"{where}:{line}: {first.value!r} is not in cli.fr.toml and cli.en.toml"
        params = {k.arg for k in call.keywords if k.arg}
        if not any(k.arg is None for k in call.keywords) and call.func.__class__ is ast.Name \
                and call.func.id in errors | {"Message", "_type_error"}:
            needed = set(re.findall(r"\{(\w+)", cli_labels("en")[first.value]))
            assert needed == params, f"{where}:{line}: {first.value} takes {needed}, given {params}"


SECTIONS = ("main", "audit", "columns", "generate", "template", "review", "history", "rules", "serve")


def test_every_key_written_anywhere_in_the_code_is_in_both_files():
    """Keys kept in tables (`TITLES = {"money": "history.title_money"}`) and
    looked up later count too: any string of the code shaped like a key of
    a section of the label files must be in both."""
    keys = set(cli_labels("fr")) & set(cli_labels("en"))
    shaped = re.compile(rf"({'|'.join(SECTIONS)})\.[a-z][a-z0-9_]*")
    found = []
    for path in sorted((ROOT / "auditor").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and shaped.fullmatch(node.value):
                found.append((path.relative_to(ROOT).as_posix(), node.lineno, node.value))
    assert len(found) > 150
    assert [f for f in found if f[2] not in keys] == []


def test_every_help_key_in_cli_py_is_in_both_files():
    keys = set(cli_labels("fr")) & set(cli_labels("en"))
    tree = ast.parse((ROOT / "auditor" / "cli.py").read_text(encoding="utf-8"))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            for kw in node.keywords:
                if kw.arg in ("help", "description", "title") and isinstance(kw.value, ast.Constant):
                    found.append(kw.value.value)
    assert len(found) > 60
    assert [k for k in found if k not in keys] == []


def test_no_error_or_notice_is_built_as_english_text():
    """UsageError, ReviewError, ColumnsFileError and the batch's notices take a
    key, never an f-string, anywhere in auditor/."""
    for where, line, call in _calls({"UsageError", "WriteError", "WorkerStartError", "ReviewError",
                                     "ColumnsFileError", "notice"}):
        first = call.args[0] if call.args else None
        assert not isinstance(first, ast.JoinedStr), f"{where}:{line}: an f-string message"
        if isinstance(first, ast.Constant) and getattr(call.func, "id", getattr(call.func, "attr", "")) in (
                "ReviewError", "ColumnsFileError", "notice"):
            raise AssertionError(f"{where}:{line}: a plain text message; give Message(key, ...)")


def test_what_cli_py_prints_has_no_words_of_its_own():
    """Every sentence cli.py prints comes from a label file: the literal parts
    of its print() calls hold no words (bar the article abbreviation)."""
    tree = ast.parse((ROOT / "auditor" / "cli.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and getattr(node.func, "id", None) == "print":
            for arg in node.args:
                parts = arg.values if isinstance(arg, ast.JoinedStr) else [arg]
                for part in parts:
                    if isinstance(part, ast.Constant) and isinstance(part.value, str):
                        words = set(re.findall(r"[A-Za-zÀ-ÿ]{2,}", part.value)) - {"art", "ecarte", "audit"}
                        assert not words, f"cli.py:{node.lineno}: {part.value!r}"


# -- messages ---------------------------------------------------------------------

def test_a_message_is_its_english_text_and_speaks_any_language():
    m = Message("main.no_such_path", path="x.xlsx")
    assert m == "x.xlsx: no such file or folder" and "no such file" in m
    assert m.text("fr") == "x.xlsx : fichier ou dossier introuvable"
    error = WriteError("audit.write_stopped", error=Message("main.cannot_write", path="o/r.html", reason="Disk full"),
                       done=2, total=5, resume=Message("audit.resume_no_cache"))
    assert str(error).startswith("cannot write o/r.html: Disk full. The run stopped after 2 of 5 carnet(s); with")
    assert error.text("fr") == ("impossible d'écrire o/r.html : Disk full. L'audit s'est arrêté après 2 carnet(s) "
                                "sur 5 ; avec --cache DIR, un nouvel audit reprend là où le précédent s'est arrêté")


def test_messages_and_errors_cross_processes_whole():
    m = pickle.loads(pickle.dumps(Message("audit.retrying_alone", shown="t3")))
    assert m == "t3: retrying it alone" and m.text("fr") == "t3 : nouvel essai, seul"
    e = pickle.loads(pickle.dumps(WriteError("main.cannot_write", path="p", reason="r")))
    assert isinstance(e, WriteError) and e.text("fr") == "impossible d'écrire p : r" and str(e) == "cannot write p: r"


# -- which language -------------------------------------------------------------

@pytest.mark.parametrize("environ, lang", [
    ({}, "en"),
    ({"LANG": "fr_FR.UTF-8"}, "fr"), ({"LANG": "fr_BE.UTF-8"}, "fr"), ({"LANG": "fr_CA"}, "fr"),
    ({"LANG": "fr"}, "fr"), ({"LANG": "fr_FR@euro"}, "fr"), ({"LANG": "FR_fr.utf8"}, "fr"),
    ({"LANG": "C"}, "en"), ({"LANG": "C.UTF-8"}, "en"), ({"LANG": "POSIX"}, "en"), ({"LANG": "en_GB.UTF-8"}, "en"),
    ({"LANG": "de_DE.UTF-8"}, "en"), ({"LANG": "fy_NL"}, "en"), ({"LANG": "fra"}, "en"), ({"LANG": ""}, "en"),
    ({"LANG": "en_US.UTF-8", "LC_MESSAGES": "fr_FR.UTF-8"}, "fr"),
    ({"LANG": "fr_FR.UTF-8", "LC_ALL": "C"}, "en"),
    ({"LANG": "fr_FR.UTF-8", "LC_ALL": ""}, "fr"),             # set but empty: not a choice
    ({"LANG": "en_US.UTF-8", "LANGUAGE": "fr:en"}, "fr"),
    ({"LANG": "fr_FR.UTF-8", "LANGUAGE": "en_GB:fr"}, "en"),
])
def test_environment_lang(environ, lang):
    assert environment_lang(environ) == lang


@pytest.mark.parametrize("argv, lang", [
    (["rules"], None), (["rules", "--lang", "en"], "en"), (["--lang=fr", "rules"], "fr"),
    (["audit", "x", "--lang", "en", "--lang", "fr"], "fr"), (["audit", "--", "--lang", "en"], None),
    (["rules", "--lang", "de"], None), (["rules", "--lang"], None),
    (["history", "h", "--lang=en", "--sql", "SELECT 1"], "en"),
    (["rules", "--lan", "en"], "en"), (["rules", "--l=fr"], "fr"),   # argparse's abbreviations

])
def test_chosen_lang(argv, lang):
    assert chosen_lang(argv) == lang


def test_no_other_option_starts_like_lang():
    """chosen_lang reads any prefix of --lang from --l on, as argparse does:
    true only while no other option starts with --l."""
    for p in parsers(build_parser("en")):
        assert [o for a in p._actions for o in a.option_strings if o.startswith("--l") and o != "--lang"] == []


# -- the user's real environment: the console script ---------------------------------

FRENCH_HELP = {   # a phrase of each command's French help
    "audit": "dossier de sortie (par défaut : reports/)", "columns": "la correspondance des colonnes à appliquer",
    "generate": "graine du générateur", "template": "le fichier .xlsx ou .ods à écrire",
    "review": "qui a décidé", "history": "n'importe quelle requête SQL", "rules": "expliquer une règle",
    "serve": "ne pas ouvrir le navigateur",
}
ENGLISH_HELP = {
    "audit": "output folder (default: reports/)", "columns": "the column mapping to apply",
    "generate": "random seed", "template": "the .xlsx or .ods file to write", "review": "who decided",
    "history": "any SQL query", "rules": "explain one rule", "serve": "do not open the browser",
}


@pytest.mark.slow
@pytest.mark.subprocess
def test_french_locale_help_of_every_command_without_lang_option():
    top = run(["--help"], LANG="fr_FR.UTF-8")
    assert top.returncode == 0 and top.stdout.startswith("utilisation : ecarte-audit")
    assert "Audite les carnets spéciaux" in top.stdout and "\ncommandes :\n" in top.stdout
    assert "auditer des carnets et écrire les rapports" in top.stdout
    for command, phrase in FRENCH_HELP.items():
        help_ = run([command, "--help"], LANG="fr_FR.UTF-8")
        assert help_.returncode == 0, (command, help_.stderr)
        text = " ".join(help_.stdout.split())   # argparse wraps lines
        assert help_.stdout.startswith(f"utilisation : ecarte-audit {command}"), command
        assert phrase in text, (command, text)
        assert "afficher cette aide et quitter" in text and "show this help" not in text, command
        assert "options :" in text and ENGLISH_HELP[command] not in text, command


@pytest.mark.slow
@pytest.mark.subprocess
def test_french_locale_errors_without_lang_option(tmp_path):
    missing = run(["audit"], LANG="fr_FR.UTF-8")
    assert missing.returncode == 2
    assert "ecarte-audit audit : erreur : arguments obligatoires manquants : PATH" in missing.stderr
    bad = run(["audit", "--jobs", "0", "x"], LANG="fr_FR.UTF-8")
    assert bad.returncode == 2 and "argument --jobs : doit valoir au moins 1 : '0'" in bad.stderr
    choice = run(["audit", "x", "--fail-on", "souvent"], LANG="fr_FR.UTF-8")
    assert "choix invalide : 'souvent'" in choice.stderr
    unknown = run(["audit", "x", "--bogus"], LANG="fr_FR.UTF-8")
    assert unknown.returncode == 2 and "arguments non reconnus : --bogus" in unknown.stderr
    absent = run(["audit", "nulle-part"], LANG="fr_FR.UTF-8")
    assert absent.returncode == 2
    assert absent.stderr.strip() == "ecarte-audit: nulle-part : fichier ou dossier introuvable"
    (tmp_path / "vide").mkdir()
    empty = run(["audit", tmp_path / "vide"], LANG="fr_FR.UTF-8")
    assert empty.returncode == 2 and "aucun carnet trouvé dans" in empty.stderr
    new = run(["audit", BAD, "--fail-on-new", "--out", tmp_path / "o"], LANG="fr_FR.UTF-8")
    assert new.returncode == 2 and "--fail-on-new nécessite --baseline" in new.stderr
    review = run(["review", tmp_path, "abc", "--status", "confirme", "--comment", "x", "--by", "moi"],
                 LC_ALL="fr_FR.UTF-8")
    assert review.returncode == 2 and "empreinte 'abc' trop courte" in review.stderr
    history = run(["history", tmp_path / "nulle-part"], LC_MESSAGES="fr_FR.UTF-8", LANG="C")
    assert history.returncode == 2 and "dossier d'historique introuvable" in history.stderr
    template = run(["template", tmp_path / "modele.pdf"], LANGUAGE="fr", LANG="en_US.UTF-8")
    assert template.returncode == 2 and "le modèle s'écrit en .xlsx ou en .ods" in template.stderr
    port = run(["serve", "--port", "70000"], LANG="fr_FR.UTF-8")
    assert port.returncode == 2 and "pas un numéro de port (1 à 65535)" in port.stderr
    assert "Traceback" not in "".join(p.stderr for p in (missing, bad, absent, empty, new, review, history))


@pytest.mark.slow
@pytest.mark.subprocess
def test_french_locale_rules_list_and_explain():
    rules = run(["rules"], LANG="fr_FR.UTF-8")
    assert rules.returncode == 0
    assert re.search(r"^EC64-01\s+64\s+erreur\s+Numérotation", rules.stdout, re.M)
    explain = run(["rules", "--explain", "EC64-01"], LANG="fr_FR.UTF-8")
    assert explain.stdout.startswith("EC64-01 — art. 64 — erreur\nNumérotation")
    # No English paragraph (the check's docstring) in the French explanation.
    assert "Why:" not in explain.stdout and "Compliant" not in explain.stdout
    assert "Nécessite" in explain.stdout
    unknown = run(["rules", "--explain", "ec99-99"], LANG="fr_FR.UTF-8")
    assert unknown.returncode == 2 and "code de règle inconnu 'ec99-99'" in unknown.stderr


@pytest.mark.slow
@pytest.mark.subprocess
def test_french_locale_audit_and_generate_messages(tmp_path):
    # The real clock, stderr a pipe: one line per carnet, in French; the report stays French.
    proc = run(["audit", BAD, "--out", tmp_path / "o", "--jobs", "1"], LANG="fr_FR.UTF-8")
    assert proc.returncode == 1, proc.stderr
    assert re.search(r"prelevements : \d+ erreur\(s\), \d+ alerte\(s\), \d+ information\(s\) →", proc.stderr)
    assert 'lang="fr"' in (tmp_path / "o" / "prelevements" / "report.html").read_text(encoding="utf-8")
    again = run(["audit", BAD, SAMPLES / "compliant" / "forges-table5", "--out", tmp_path / "b", "--jobs", "1",
                 "--cache", tmp_path / "c", "--quiet"], LANG="fr_FR.UTF-8")
    assert again.returncode == 1 and again.stderr == ""
    cached = run(["audit", BAD, SAMPLES / "compliant" / "forges-table5", "--out", tmp_path / "b", "--jobs", "1",
                  "--cache", tmp_path / "c"], LANG="fr_FR.UTF-8")
    assert "2 carnet(s) sur 2 déjà audité(s) (dans le cache), 0 à auditer" in cached.stderr
    assert "2 carnet(s) audité(s) (2 depuis le cache), 0 constat(s) entre carnets" in cached.stderr
    gen = run(["generate", tmp_path / "g", "--seances", "1", "--coups", "4", "--breaches", "EC64-01"],
              LANG="fr_FR.UTF-8")
    assert gen.returncode == 0, gen.stderr
    assert re.search(r"g : 1 séance\(s\), \d+ coups, \d+ mises, \d+ séries de tickets ; constats attendus : EC64-01",
                     gen.stderr)


@pytest.mark.slow
@pytest.mark.subprocess
def test_french_locale_notices_of_reviews_and_columns(tmp_path):
    reviews = tmp_path / "revues.jsonl"
    reviews.write_text('{"fingerprint": "x"}\npas du json\n', encoding="utf-8")
    proc = run(["audit", BAD, "--out", tmp_path / "o", "--quiet", "--reviews", reviews], LANG="fr_FR.UTF-8")
    assert proc.returncode == 1
    assert f"ecarte-audit: {reviews}, ligne 2 : pas une ligne JSON ; ligne gardée dans le fichier" in proc.stderr
    mapping = tmp_path / "m.toml"
    mapping.write_text("[nope]\nMt = 'montant'\n", encoding="utf-8")
    cols = run(["columns", BAD, "--columns", mapping], LANG="fr_FR.UTF-8")
    assert cols.returncode == 2 and f"{mapping} : table inconnue [nope]" in cols.stderr
    shown = run(["columns", BAD], LANG="fr_FR.UTF-8")
    assert shown.returncode == 0 and "(conteneur csv)" in shown.stdout


@pytest.mark.slow
@pytest.mark.subprocess
def test_english_locales_and_lang_option_wins(tmp_path):
    for env in ({"LANG": "en_US.UTF-8"}, {"LANG": "C"}, {}):
        help_ = run(["audit", "--help"], **env)
        assert help_.stdout.startswith("usage: ecarte-audit audit"), env
        assert "output folder (default: reports/)" in help_.stdout and "show this help and exit" in help_.stdout
        missing = run(["audit"], **env)
        assert "ecarte-audit audit: error: the following arguments are required: PATH" in missing.stderr, env
    english = run(["audit", "nowhere"], LC_ALL="C", LANG="fr_FR.UTF-8")
    assert english.stderr.strip() == "ecarte-audit: nowhere: no such file or folder"
    # --lang wins over the locale, before or after the sub-command, for help and errors.
    assert run(["audit", "--help", "--lang", "en"], LANG="fr_FR.UTF-8").stdout.startswith("usage: ")
    assert run(["--lang", "en", "rules", "--help"], LANG="fr_FR.UTF-8").stdout.startswith("usage: ")
    assert run(["--lang", "fr", "rules", "--help"], LANG="C.UTF-8").stdout.startswith("utilisation : ")
    lang_en = run(["audit", "nulle-part", "--lang", "en"], LANG="fr_FR.UTF-8")
    assert lang_en.stderr.strip() == "ecarte-audit: nulle-part: no such file or folder"
    lang_fr = run(["audit", "nowhere", "--lang=fr"], LANG="en_GB.UTF-8")
    assert lang_fr.stderr.strip() == "ecarte-audit: nowhere : fichier ou dossier introuvable"
    rules = run(["rules"], LANG="fr_FR.UTF-8", LC_ALL="en_GB.UTF-8")
    assert re.search(r"^EC64-01\s+64\s+error\s+Coup numbering", rules.stdout, re.M)
    fr = run(["rules", "--explain", "EC64-01", "--lang", "fr"], LANG="en_US.UTF-8")
    assert fr.stdout.startswith("EC64-01 — art. 64 — erreur\nNumérotation")
    en = run(["rules", "--explain", "EC64-01", "--lang", "en"], LANG="fr_FR.UTF-8")
    assert en.stdout.startswith("EC64-01 — art. 64 — error\nCoup numbering")
    bad = run(["rules", "--lang", "de"], LANG="fr_FR.UTF-8")   # not a language: refused, in the locale's
    assert bad.returncode == 2 and "choix invalide : 'de'" in bad.stderr


@pytest.mark.slow
@pytest.mark.subprocess
def test_reports_stay_french_unless_lang_is_given(tmp_path):
    english_locale = run(["audit", BAD, "--out", tmp_path / "a", "--jobs", "1"], LANG="en_US.UTF-8")
    assert english_locale.returncode == 1
    assert "prelevements: " in english_locale.stderr and " error(s), " in english_locale.stderr
    assert 'lang="fr"' in (tmp_path / "a" / "prelevements" / "report.html").read_text(encoding="utf-8")
    lang_en = run(["--lang", "en", "audit", BAD, "--out", tmp_path / "b", "--quiet", "--jobs", "1"],
                  LANG="fr_FR.UTF-8")
    assert lang_en.returncode == 1
    assert 'lang="en"' in (tmp_path / "b" / "prelevements" / "report.html").read_text(encoding="utf-8")
    blank = run(["template", tmp_path / "vierge"], LANG="en_US.UTF-8")
    assert blank.returncode == 0 and blank.stderr.strip().endswith("blank carnet workbook written")
    explicit = run(["template", tmp_path / "fr", "--lang", "fr"], LANG="en_US.UTF-8")
    assert explicit.stderr.strip().endswith("classeur de carnet vierge écrit")
    english = run(["template", tmp_path / "en", "--lang", "en"], LANG="fr_FR.UTF-8")
    assert english.stderr.strip().endswith("blank carnet workbook written")
    from openpyxl import load_workbook

    def cells(name):
        book = load_workbook(tmp_path / f"{name}.xlsx")
        return [[c.value for c in row] for ws in book.worksheets for row in ws.iter_rows(max_row=3)]

    assert cells("vierge") == cells("fr") != cells("en")   # the locale leaves the document French


# -- in process ---------------------------------------------------------------------

def test_in_process_messages_follow_the_locale(capsys, locale):
    locale(LANG="fr_FR.UTF-8")
    assert main(["rules", "--explain", "EC00-00"]) == 2
    assert "code de règle inconnu" in capsys.readouterr().err
    locale(LANG="C")
    assert main(["rules", "--explain", "EC00-00"]) == 2
    assert "unknown rule code" in capsys.readouterr().err
    locale(LANG="fr_FR.UTF-8")
    with pytest.raises(SystemExit):
        main(["rules", "--lang", "de"])
    assert "choix invalide : 'de'" in capsys.readouterr().err
    assert argparse._("usage: ") == "usage: "     # argparse's own words put back after parsing
    locale(LANG="C")
    with pytest.raises(SystemExit):
        main(["rules", "--lang", "de"])
    assert "invalid choice: 'de'" in capsys.readouterr().err


def test_review_messages_in_both_languages(tmp_path, capsys, locale):
    locale(LANG="C")
    out = tmp_path / "o"
    assert main(["audit", str(BAD), "--out", str(out), "--quiet", "--format", "json"]) == 1
    import json

    finding = json.loads((out / "prelevements" / "findings.json").read_text(encoding="utf-8"))["findings"][0]
    capsys.readouterr()
    assert main(["review", str(out), finding["fingerprint"][:10], "--status", "confirme", "--comment", "vu",
                 "--by", "A. Inspecteur", "--lang", "fr"]) == 0
    said = capsys.readouterr().err
    assert f"{finding['fingerprint']} ({finding['code']}, séance {finding['seance']}, coup {finding['coup']}) : " \
           f"confirmé — A. Inspecteur → " in said
    assert main(["review", str(out), "ffffffffffffffff", "--status", "confirme", "--comment", "vu", "--by", "A"]) == 2
    assert "no finding with fingerprint 'ffffffffffffffff'" in capsys.readouterr().err
    locale(LANG="fr_FR.UTF-8")
    assert main(["review", str(out), "ffffffffffffffff", "--status", "confirme", "--comment", " ", "--by", "A"]) == 2
    assert "aucun constat d'empreinte 'ffffffffffffffff'" in capsys.readouterr().err
    assert main(["review", str(out), finding["fingerprint"], "--status", "confirme", "--comment", " ",
                 "--by", "A"]) == 2
    assert "une revue nécessite une justification (--comment)" in capsys.readouterr().err


def test_usage_error_without_a_key_is_shown_as_given():
    # Not a way to write our messages (the tests above forbid it), but a
    # caller's text must never be lost.
    assert UsageError("plain words").text("fr") == "plain words"


@pytest.mark.subprocess
@pytest.mark.parametrize("args", [["rules"], ["rules", "--explain", "EC64-01"], ["--help"]])
def test_a_reader_that_goes_away_gets_no_traceback(args):
    """`ecarte-audit rules | head -1`: the pipe closes before the command has
    written; it stops quietly (141, as a shell reports SIGPIPE), in any language."""
    env = {k: v for k, v in os.environ.items() if k not in LOCALE_VARS}
    env["LANG"] = "fr_FR.UTF-8"
    proc = subprocess.Popen([str(SCRIPT), *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    proc.stdout.close()   # the reader is gone before the first line is written
    err = proc.stderr.read().decode()
    rc = proc.wait(timeout=120)
    assert "Traceback" not in err and "BrokenPipe" not in err, err
    assert rc in (0, 141), (rc, err)


@pytest.mark.subprocess
def test_no_option_is_typed_by_a_python_builtin():
    """argparse's error for `type=int` names Python's type ("valeur int
    invalide"): every typed option goes through one of ours, which says it in words."""
    tree = ast.parse((ROOT / "auditor" / "cli.py").read_text(encoding="utf-8"))
    builtin = [kw.value.id for node in ast.walk(tree) if isinstance(node, ast.Call)
               for kw in node.keywords if kw.arg == "type" and isinstance(kw.value, ast.Name)
               and kw.value.id in ("int", "float", "str")]
    assert builtin == []
    bad = run(["generate", "out", "--seed", "abc"], LANG="fr_FR.UTF-8")
    assert bad.returncode == 2 and "pas un nombre entier : 'abc'" in bad.stderr and "int" not in bad.stderr


@pytest.mark.subprocess
def test_the_systems_reason_is_said_in_the_users_language(tmp_path):
    """A write the system refuses: its usual reasons are in the label files
    (the C library's own text is English only)."""
    blocker = tmp_path / "file"
    blocker.write_text("not a folder", encoding="utf-8")
    fr = run(["generate", blocker / "carnet"], LANG="fr_FR.UTF-8")
    assert fr.returncode == 2 and "un élément du chemin n'est pas un dossier" in fr.stderr, fr.stderr
    en = run(["generate", blocker / "carnet"], LANG="C")
    assert en.returncode == 2 and "a part of the path is not a folder" in en.stderr, en.stderr
