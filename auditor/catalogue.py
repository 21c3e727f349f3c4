"""The rule catalogue and the regulation profile, loaded from `rules/`.

`rules/` is data beside the package; in a wheel it is installed as
`auditor/_rules`. One accessor finds it in both places.
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

from auditor.model import Severity
from auditor.money import Levy

CODE_PATTERN = re.compile(r"^EC\d{2,3}-\d{2}$")
LANGS = ("fr", "en")


def rules_root():
    """The `rules/` folder: installed package data, else the checkout's folder."""
    try:
        root = resources.files("auditor._rules")
        if root.joinpath("profile.toml").is_file():
            return root
    except ModuleNotFoundError:
        pass
    return Path(__file__).resolve().parent.parent / "rules"


@dataclass(frozen=True)
class RuleMeta:
    """One rule of the catalogue: code, article, severity, titles, explanation and messages."""

    code: str
    article: str
    severity: Severity
    title: dict[str, str]
    explain: dict[str, str]
    messages: dict[str, dict[str, str]]
    retired: bool = False

    def message(self, kind: str, lang: str) -> str:
        """The message template of variant `kind` in `lang` (the default variant, else the title, when it has none)."""
        variants = self.messages.get(kind) or self.messages.get("default")
        if variants is None:
            return self.title[lang]
        return variants.get(lang) or variants["fr"]

    def sort_key(self) -> tuple:
        """The code's order in the catalogue."""
        return code_sort_key(self.code)


def code_sort_key(code: str) -> tuple:
    """Catalogue order: EC00, then by article number as in the regulation."""
    art, nn = code[2:].split("-")
    # 661 is article 66-1 and 561 is 56-1: order them right after 66 and 56.
    major = {"661": 66.1, "561": 56.1}.get(art, float(art))
    return (major, int(nn))


@dataclass(frozen=True)
class Profile:
    """The regulation profile: levy rate and step, tie rounding, minimum stake, ticket values and books."""

    name: str
    levy_rate: str
    levy_step_cents: int
    tie_rounding: str
    min_stake_cents: int
    stake_step_cents: int
    ticket_values_cents: tuple[int, ...]
    book_size: int
    ticket_number_max: int
    max_ticket_values_per_seance: int
    decks_per_seance: int
    levy: Levy = field(init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "levy", Levy(self.levy_rate, self.levy_step_cents, self.tie_rounding))

    def as_json(self) -> dict:
        """What findings.json records of the profile."""
        return {"name": self.name, "levy_rate": self.levy_rate, "tie_rounding": self.tie_rounding}


def _read_toml(node) -> dict:
    return tomllib.loads(node.read_text(encoding="utf-8"))


def load_profile(path: str | Path | None = None, **overrides) -> Profile:
    """The regulation profile (the shipped `profile.toml`, or `path`), with `overrides`."""
    data = _read_toml(Path(path) if path else rules_root().joinpath("profile.toml"))
    data.update(overrides)
    data["ticket_values_cents"] = tuple(int(v) for v in data["ticket_values_cents"])
    return Profile(**data)


def _parse_rule(data: dict, origin: str) -> RuleMeta:
    code = data.get("code", "")
    if not CODE_PATTERN.match(code):
        raise ValueError(f"{origin}: bad rule code {code!r}")
    for key in ("title", "explain"):
        missing = [lang for lang in LANGS if not data.get(key, {}).get(lang)]
        if missing:
            raise ValueError(f"{origin}: {key} lacks {missing}")
    messages = data.get("messages", {})
    for kind, variants in messages.items():
        if set(variants) != set(LANGS):
            raise ValueError(f"{origin}: message {kind!r} must have exactly {LANGS}")
    return RuleMeta(
        code=code,
        article=str(data["article"]),
        severity=Severity.parse(data["severity"]),
        title=dict(data["title"]),
        explain=dict(data["explain"]),
        messages={k: dict(v) for k, v in messages.items()},
        retired=bool(data.get("retired", False)),
    )


@lru_cache(maxsize=1)
def load_catalogue() -> dict[str, RuleMeta]:
    """Every rule of the catalogue, in catalogue order; one file per code."""
    rules: dict[str, RuleMeta] = {}
    folder = rules_root().joinpath("catalogue")
    for node in sorted(folder.iterdir(), key=lambda n: n.name):
        if not node.name.endswith(".toml"):
            continue
        meta = _parse_rule(_read_toml(node), node.name)
        if node.name != f"{meta.code}.toml":
            raise ValueError(f"{node.name}: file name must be the code {meta.code}")
        rules[meta.code] = meta
    return dict(sorted(rules.items(), key=lambda kv: code_sort_key(kv[0])))
