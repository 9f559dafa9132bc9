"""The coverage ledger of a paper: every statement of the paper that asserts something, in paper
order, with the claims that check it or why none can (``coverage.toml`` beside the paper's
module, kept by hand from reading the paper).

``icl-verify list --paper KEY --coverage`` prints it; ``scripts/coverage_md.py`` writes
``docs/coverage.md``.  Coverage = checked items / checkable items (checked + not yet checked)."""
from __future__ import annotations

import tomllib
from dataclasses import dataclass
from pathlib import Path

from .errors import UsageError

KINDS = ("equation", "theorem", "lemma", "proposition", "corollary", "remark", "footnote",
         "figure", "prose")
STATUSES = ("checked", "checkable", "not checkable")


@dataclass(frozen=True)
class Item:
    """One line of the ledger."""

    ref: str
    kind: str
    line: int
    says: str
    status: str
    claims: tuple[str, ...]
    why: str

    def as_dict(self) -> dict:
        return {"ref": self.ref, "kind": self.kind, "line": self.line, "says": self.says,
                "status": self.status, "claims": list(self.claims), "why": self.why}


@dataclass(frozen=True)
class Coverage:
    paper: str
    items: tuple[Item, ...]

    @property
    def checked(self) -> int:
        return sum(i.status == "checked" for i in self.items)

    @property
    def checkable(self) -> int:
        """Items a claim checks or could check."""
        return sum(i.status != "not checkable" for i in self.items)

    def summary(self) -> str:
        share = f"{100 * self.checked / self.checkable:.0f}%" if self.checkable else "-"
        return (f"{self.paper}: {len(self.items)} statements, {self.checkable} checkable, "
                f"{self.checked} checked ({share})")


def ledger_path(paper: str) -> Path:
    from . import registry

    module = registry._module(paper)  # noqa: SLF001 - the registry's loader, errors included
    return Path(module.__file__).with_name("coverage.toml")


def load(paper: str) -> Coverage:
    """The paper's ledger, validated against the registry (UsageError in one line otherwise)."""
    from . import registry

    path = ledger_path(paper)
    if not path.is_file():
        raise UsageError(f"{paper} has no coverage ledger ({path.name} beside its module)")
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: not valid TOML ({exc})") from None
    known = {c.id for c in registry.by_paper(paper)}
    items = []
    for k, raw in enumerate(data.get("item", [])):
        where = f"{path.name} item {k + 1}"
        try:
            item = Item(str(raw["ref"]), str(raw["kind"]), int(raw["line"]), str(raw["says"]),
                        str(raw["status"]), tuple(raw.get("claims", ())), str(raw.get("why", "")))
        except (KeyError, TypeError, ValueError) as exc:
            raise UsageError(f"{paper}: {where} is malformed ({type(exc).__name__}: {exc})") \
                from None
        if item.kind not in KINDS or item.status not in STATUSES:
            raise UsageError(f"{paper}: {where} ({item.ref}) has kind {item.kind!r} / status "
                             f"{item.status!r}; kinds: {', '.join(KINDS)}; statuses: "
                             f"{', '.join(STATUSES)}")
        unknown = [c for c in item.claims if c not in known]
        if unknown:
            raise UsageError(f"{paper}: {where} ({item.ref}) names unknown claim {unknown[0]!r}")
        if (item.status == "checked") != bool(item.claims):
            raise UsageError(f"{paper}: {where} ({item.ref}): a checked item names its claims, "
                             f"and only a checked one does")
        items.append(item)
    return Coverage(paper, tuple(items))


def coverage_lines(cov: Coverage, verdicts: dict[str, str] | None = None,
                   width: int = 100) -> list[str]:
    """The ledger as text: ref, status, the claims (with recorded verdicts) or the reason."""
    import textwrap

    out = [cov.summary(), ""]
    pad = max((len(i.ref) for i in cov.items), default=0)
    for i in cov.items:
        if i.claims:
            tail = ", ".join(c + (f" ({verdicts[c]})" if verdicts and c in verdicts else "")
                             for c in i.claims)
        else:
            tail = i.why or "-"
        text = f"{i.ref.ljust(pad)}  {i.status:<13}  {i.says} -- {tail}"
        out.append(textwrap.fill(text, width, subsequent_indent=" " * (pad + 17)))
    return out
