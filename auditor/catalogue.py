"""The rule catalogue and the regulation profile, loaded from `rules/`.

`rules/` is data beside the package; in a wheel it is installed as
`auditor/_rules`. One accessor finds it in both places.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from enum import Enum
from functools import lru_cache
from importlib import resources
from pathlib import Path

from auditor.model import Severity
from auditor.money import Levy
from auditor.user_cache import parse_toml, toml_loads

CODE_PATTERN = re.compile(r"^EC\d{2,3}-\d{2}$")
LANGS = ("fr", "en")
GROUP_PATTERN = re.compile(r"^[a-z][a-z0-9_]*$")


class Money(Enum):
    """What a rule's `impact_cents` counts; the report adds each meaning on its own line."""

    LEVY = "levy"                                      # levy owed: expected − recorded (negative: levied in excess)
    FACE_VALUE = "face_value"                          # face value of tickets missing from their series (art. 83)
    LEVY_WITHOUT_TICKETS = "levy_without_tickets"      # levy recorded without the tickets that show it
    CAGNOTTE = "cagnotte"                              # cagnotte counted short of its stubs' face value
    NONE = "none"                                      # no money at stake: impact_cents is always 0


class RowRejection(Enum):
    """Whether a finding of the rule takes its row out of the audit (summary's `rows_rejected`)."""

    NEVER = "never"
    ALWAYS = "always"          # the row cannot be audited (a bad cell, an orphan)
    DATA_ROW = "data_row"      # only when the finding sits on a data row (a second cover row), not a header


class TicketMap(Enum):
    """The column of the report's ticket section that counts the rule's findings."""

    MISSING = "missing"
    DUPLICATES = "duplicates"
    OUTSIDE = "outside"


class Shows(Enum):
    """What a finding row shows: expected and found, or one value of its own (information findings)."""

    EXPECTED_FOUND = "expected_found"
    REMAINING_TICKETS = "remaining_tickets"


def _enum(kind: type[Enum], data: dict, key: str, default: Enum | None, origin: str):
    """The value of `key` as a member of `kind`; a missing key is `default`
    (or an error when None), an unknown value always an error."""
    if key not in data:
        if default is None:
            raise ValueError(f"{origin}: {key} missing (one of {[m.value for m in kind]})")
        return default
    try:
        return kind(data[key])
    except ValueError:
        raise ValueError(f"{origin}: unknown {key} {data[key]!r} (one of {[m.value for m in kind]})") from None


@lru_cache(maxsize=None)
def rules_root():
    """The `rules/` folder: installed package data, else the checkout's folder
    (found once per process: it does not move, and looking costs an import attempt)."""
    try:
        root = resources.files("auditor._rules")
        if root.joinpath("profile.toml").is_file():
            return root
    except ModuleNotFoundError:
        pass
    return Path(__file__).resolve().parent.parent / "rules"


def rules_digest() -> str:
    """SHA-256 of the rulebook (the profile and every catalogue entry): what
    the cache key and the procès-verbal name as the rules audited with."""
    import hashlib

    h = hashlib.sha256()
    root = rules_root()
    for node in sorted([root.joinpath("profile.toml")] + list(root.joinpath("catalogue").iterdir()),
                       key=lambda n: n.name):
        h.update(node.name.encode() + b"\0" + node.read_bytes())
    return h.hexdigest()


@dataclass(frozen=True)
class RuleMeta:
    """One rule of the catalogue: code, article, severity, titles, explanation and messages."""

    code: str
    article: str
    severity: Severity
    title: dict[str, str]
    explain: dict[str, str]
    messages: dict[str, dict[str, str]]
    money: Money = Money.NONE
    # Rules of one group count the same cents twice (a lost ticket is a levy
    # without its tickets and a missing number): per séance, the rules of one
    # kind of money add up and the totals take the larger kind (auditor.stake).
    same_loss: str | None = None
    rejects_row: RowRejection = RowRejection.NEVER
    ticket_map: TicketMap | None = None
    shows: Shows = Shows.EXPECTED_FOUND
    retired: bool = False

    def message(self, kind: str, lang: str) -> str:
        """The message template of variant `kind` in `lang`. A kind the catalogue
        does not give is a defect of the check or the catalogue: it raises
        (a fallback would print another variant's words, silently wrong)."""
        try:
            variants = self.messages[kind]
        except KeyError:
            raise KeyError(f"{self.code}: no message {kind!r} in the catalogue "
                           f"(it has {sorted(self.messages)})") from None
        return variants[lang] if lang in variants else variants["fr"]

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


def _read_toml(node, shipped: bool = True) -> dict:
    """A TOML file as a dict; the package's own files parsed once per user (`user_cache`)."""
    text = node.read_text(encoding="utf-8")
    # A user's own file is parsed each time (not kept in the user's cache).
    return toml_loads(text) if shipped else parse_toml(text)


def load_profile(path: str | Path | None = None, **overrides) -> Profile:
    """The regulation profile (the shipped `profile.toml`, or `path`), with `overrides`."""
    if path is None and not overrides:
        return _shipped_profile()
    data = _read_toml(Path(path), shipped=False) if path else _read_toml(rules_root().joinpath("profile.toml"))
    return _profile_of({**data, **overrides})


def _profile_of(data: dict) -> Profile:
    data["ticket_values_cents"] = tuple(int(v) for v in data["ticket_values_cents"])
    return Profile(**data)


_SHIPPED: list = []   # [the file's path and stat, its Profile]: one worker's carnets share it


def _shipped_profile() -> Profile:
    """The shipped profile, read again only when its file changed (a worker
    asks for it once per carnet: some 0.7 ms to find, read and parse)."""
    node = rules_root().joinpath("profile.toml")
    try:
        st = os.stat(str(node))
        # The inode and change time too: a file put in place with its old time kept (rsync -t, cp -p).
        stamp = (str(node), st.st_ino, st.st_mtime_ns, st.st_ctime_ns, st.st_size)
    except (OSError, TypeError):
        stamp = None   # not a plain file (a zipped install): read each time
    if stamp is not None and _SHIPPED and _SHIPPED[0] == stamp:
        return _SHIPPED[1]
    profile = _profile_of(_read_toml(node))
    if stamp is not None:
        _SHIPPED[:] = [stamp, profile]
    return profile


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
    if not messages:
        raise ValueError(f"{origin}: no message")
    unknown = set(data) - KEYS
    if unknown:
        raise ValueError(f"{origin}: unknown keys {sorted(unknown)}")
    same_loss = data.get("same_loss")
    if same_loss is not None and not (isinstance(same_loss, str) and GROUP_PATTERN.match(same_loss)):
        raise ValueError(f"{origin}: same_loss must be a group name, not {same_loss!r}")
    money = _enum(Money, data, "money", None, origin)
    if same_loss and money is Money.NONE:
        raise ValueError(f"{origin}: same_loss {same_loss!r} on a rule without money")
    return RuleMeta(
        code=code,
        article=str(data["article"]),
        severity=Severity.parse(data["severity"]),
        title=dict(data["title"]),
        explain=dict(data["explain"]),
        messages={k: dict(v) for k, v in messages.items()},
        money=money,
        same_loss=same_loss,
        rejects_row=_enum(RowRejection, data, "rejects_row", RowRejection.NEVER, origin),
        ticket_map=_enum(TicketMap, data, "ticket_map", None, origin) if "ticket_map" in data else None,
        shows=_enum(Shows, data, "shows", Shows.EXPECTED_FOUND, origin),
        retired=bool(data.get("retired", False)),
    )


# Every key a catalogue file may hold: a misspelt key is an error, not a silent default.
KEYS = {"code", "article", "severity", "title", "explain", "messages", "money", "same_loss", "rejects_row",
        "ticket_map", "shows", "retired"}


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
    _check_across(rules)
    return dict(sorted(rules.items(), key=lambda kv: code_sort_key(kv[0])))


def _check_across(rules: dict[str, RuleMeta]) -> None:
    """What no single file can say wrong: a same-loss group of one rule, or of
    one kind of money, counts nothing once (a misspelt group name), and a
    ticket-map column takes one rule."""
    groups: dict[str, list[str]] = {}
    columns: dict[TicketMap, list[str]] = {}
    for meta in rules.values():
        if meta.same_loss:
            groups.setdefault(meta.same_loss, []).append(meta.code)
        if meta.ticket_map:
            columns.setdefault(meta.ticket_map, []).append(meta.code)
    for name, codes in groups.items():
        if len(codes) < 2:
            raise ValueError(f"same_loss group {name!r} has one rule ({codes[0]}): name it in another rule, or drop it")
        # Rules of one kind of money add up (auditor.stake): a group needs two kinds to count anything once.
        if len({rules[c].money for c in codes}) < 2:
            raise ValueError(f"same_loss group {name!r} counts one kind of money ({rules[codes[0]].money.value}): "
                             f"its rules add up, nothing is counted once")
    for column, codes in columns.items():
        if len(codes) > 1:
            raise ValueError(f"ticket_map {column.value!r} is claimed by {codes}")


def codes_with_money(*meanings: Money) -> tuple[str, ...]:
    """The live rules whose money means one of `meanings` (every kind of money when none given), catalogue order."""
    wanted = set(meanings) if meanings else set(Money) - {Money.NONE}
    return tuple(code for code, m in load_catalogue().items() if m.money in wanted and not m.retired)


def same_loss_groups() -> dict[str, tuple[str, ...]]:
    """Each same-loss group and its rules, catalogue order."""
    groups: dict[str, tuple[str, ...]] = {}
    for code, m in load_catalogue().items():
        if m.same_loss and not m.retired:
            groups[m.same_loss] = groups.get(m.same_loss, ()) + (code,)
    return groups


def ticket_map_code(column: TicketMap) -> str:
    """The rule whose findings the ticket section's `column` counts."""
    codes = [code for code, m in load_catalogue().items() if m.ticket_map is column]
    if not codes:
        raise LookupError(f"no rule of the catalogue feeds the ticket map's {column.value!r} column")
    return codes[0]
