"""The command line speaks the user's language: help, messages and errors in
French under a French locale (LANG=fr_FR.UTF-8…), English otherwise, and
`--lang` wins. Every text comes from templates/i18n/cli.<lang>.toml."""

from __future__ import annotations

import argparse
import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from auditor.cli import LocalizedParser, build_parser, chosen_lang, main
from auditor.i18n import LANGS, argparse_words, cli_labels, environment_lang

ROOT = Path(__file__).resolve().parent.parent
SAMPLES = ROOT / "sample_carnets"
LOCALE_VARS = ("LANGUAGE", "LC_ALL", "LC_MESSAGES", "LANG")


def run(args, **env_vars) -> subprocess.CompletedProcess:
    """The installed command as a user runs it: their environment, with only
    the locale variables replaced."""
    env = {k: v for k, v in os.environ.items() if k not in LOCALE_VARS}
    env.update(env_vars)
    return subprocess.run([sys.executable, "-m", "auditor", *map(str, args)], capture_output=True, text=True,
                          env=env)


def parsers(parser: argparse.ArgumentParser):
    yield parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                yield from parsers(sub)


# -- the label files ------------------------------------------------------------

def test_both_languages_have_the_same_keys_and_different_words():
    fr, en = cli_labels("fr"), cli_labels("en")
    assert set(fr) == set(en)
    same = [k for k in fr if fr[k] == en[k] and not re.fullmatch(r"[\w ,.:'\-/()\[\]{}!r]*", fr[k])]
    assert [k for k in ("audit.help", "audit.out", "main.no_such_path", "rules.needs") if fr[k] == en[k]] == []
    assert same == [] or all("{" in fr[k] for k in same)
    for key in fr:   # the same {placeholders} on both sides
        assert set(re.findall(r"\{(\w+)", fr[key])) == set(re.findall(r"\{(\w+)", en[key])), key


def test_every_help_is_a_label_in_both_languages():
    for lang in LANGS:
        texts = set(cli_labels(lang).values())
        for p in parsers(build_parser(lang)):
            assert p.description in texts, (lang, p.prog, p.description)
            for action in p._actions:
                if action.help not in (None, argparse.SUPPRESS):
                    assert action.help in texts, (lang, p.prog, action.dest, action.help)
                for choice in getattr(action, "_choices_actions", []):
                    assert choice.help in texts, (lang, p.prog, choice.dest)


def test_a_help_that_is_not_a_key_is_refused_when_the_parser_is_built():
    parser = LocalizedParser(prog="x", lang="fr")
    with pytest.raises(ValueError, match="not a key of templates/i18n/cli.fr.toml"):
        parser.add_argument("--baseline", help="compare with an earlier run")


def _string_calls(names: set[str]):
    """(file, line, first argument) of every call to one of `names` in auditor/."""
    for path in sorted((ROOT / "auditor").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", None)) in names:
                first = node.args[0] if node.args else None
                yield path.relative_to(ROOT), node.lineno, first


def test_every_usage_error_and_cli_label_names_a_key_of_both_files():
    keys = set(cli_labels("fr")) & set(cli_labels("en"))
    calls = list(_string_calls({"UsageError", "cli_label", "_type_error"}))
    assert len(calls) > 10
    for where, line, first in calls:
        if where.as_posix() in ("auditor/errors.py", "auditor/cli.py") and not isinstance(first, ast.Constant):
            continue   # the mechanism itself passes a key along
        assert isinstance(first, ast.Constant) and isinstance(first.value, str), \
            f"{where}:{line}: give a key of cli.*.toml, not a built text"
        assert first.value in keys, f"{where}:{line}: {first.value!r} is not in cli.fr.toml and cli.en.toml"


def test_argparse_words_keep_their_placeholders():
    for english, french in argparse_words("fr").items():
        assert re.findall(r"%\(\w+\)[sr]|%[sr]", english) == re.findall(r"%\(\w+\)[sr]|%[sr]", french), english


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
])
def test_chosen_lang(argv, lang):
    assert chosen_lang(argv) == lang


# -- the user's real environment --------------------------------------------------

def test_french_locale_help_errors_and_rules_without_lang_option():
    help_ = run(["audit", "--help"], LANG="fr_FR.UTF-8")
    assert help_.returncode == 0
    assert help_.stdout.startswith("utilisation : ecarte-audit audit")
    assert "dossier de sortie (par défaut : reports/)" in help_.stdout
    assert "afficher cette aide et quitter" in help_.stdout and "show this help" not in help_.stdout

    missing = run(["audit"], LANG="fr_FR.UTF-8")
    assert missing.returncode == 2
    assert "ecarte-audit audit : erreur : arguments obligatoires manquants : PATH" in missing.stderr

    bad = run(["audit", "--jobs", "0", "x"], LANG="fr_FR.UTF-8")
    assert bad.returncode == 2 and "argument --jobs : doit valoir au moins 1 : '0'" in bad.stderr

    absent = run(["audit", "nulle-part"], LANG="fr_FR.UTF-8")
    assert absent.returncode == 2
    assert absent.stderr.strip() == "ecarte-audit: nulle-part : fichier ou dossier introuvable"

    rules = run(["rules"], LANG="fr_FR.UTF-8")
    assert rules.returncode == 0
    assert re.search(r"^EC64-01\s+64\s+erreur\s+\S", rules.stdout, re.M)
    explain = run(["rules", "--explain", "ec99-99"], LANG="fr_FR.UTF-8")
    assert explain.returncode == 2 and "code de règle inconnu 'ec99-99'" in explain.stderr


def test_french_locale_audit_messages(tmp_path):
    # An untidy real carnet, the real clock, stderr a pipe: one line per carnet, in French.
    proc = run(["audit", SAMPLES / "infractions" / "prelevements", "--out", tmp_path, "--jobs", "1"],
               LANG="fr_FR.UTF-8")
    assert proc.returncode == 1
    assert re.search(r"prelevements : \d+ erreur\(s\), \d+ alerte\(s\), \d+ information\(s\) →", proc.stderr)
    assert 'lang="fr"' in (tmp_path / "prelevements" / "report.html").read_text(encoding="utf-8")


def test_english_locale_and_lang_option_wins():
    assert run(["audit", "--help"], LANG="en_US.UTF-8").stdout.startswith("usage: ecarte-audit audit")
    assert run(["audit", "--help"]).stdout.startswith("usage: ")                      # no locale at all
    assert run(["audit", "--help", "--lang", "en"], LANG="fr_FR.UTF-8").stdout.startswith("usage: ")
    assert run(["--lang", "fr", "rules", "--help"], LANG="C.UTF-8").stdout.startswith("utilisation : ")
    english = run(["audit", "nowhere"], LC_ALL="C", LANG="fr_FR.UTF-8")
    assert english.stderr.strip() == "ecarte-audit: nowhere: no such file or folder"
    rules = run(["rules"], LANG="fr_FR.UTF-8", LC_ALL="en_GB.UTF-8")
    assert re.search(r"^EC64-01\s+64\s+error\s+Coup numbering", rules.stdout, re.M)
    fr = run(["rules", "--explain", "EC64-01", "--lang", "fr"], LANG="en_US.UTF-8")
    assert fr.stdout.startswith("EC64-01 — art. 64 — erreur\nNumérotation")


def test_reports_stay_french_unless_lang_is_given(tmp_path, monkeypatch):
    monkeypatch.setenv("LANG", "en_US.UTF-8")
    for var in ("LANGUAGE", "LC_ALL", "LC_MESSAGES"):
        monkeypatch.delenv(var, raising=False)
    bad = SAMPLES / "infractions" / "prelevements"
    main(["audit", str(bad), "--out", str(tmp_path / "a"), "--quiet", "--jobs", "1"])
    assert 'lang="fr"' in (tmp_path / "a" / "prelevements" / "report.html").read_text(encoding="utf-8")
    main(["--lang", "en", "audit", str(bad), "--out", str(tmp_path / "b"), "--quiet", "--jobs", "1"])
    assert 'lang="en"' in (tmp_path / "b" / "prelevements" / "report.html").read_text(encoding="utf-8")


def test_in_process_messages_follow_the_locale(capsys, monkeypatch):
    for var in LOCALE_VARS:
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("LANG", "fr_FR.UTF-8")
    assert main(["rules", "--explain", "EC00-00"]) == 2
    assert "code de règle inconnu" in capsys.readouterr().err
    monkeypatch.setenv("LANG", "C")
    assert main(["rules", "--explain", "EC00-00"]) == 2
    assert "unknown rule code" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["rules", "--lang", "de"])
    assert "invalid choice: 'de'" in capsys.readouterr().err
    import argparse as ap
    assert ap._("usage: ") == "usage: "     # argparse's own words restored after parsing
