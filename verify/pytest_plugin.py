"""pytest plugin: every claim becomes a test item that fails when its verdict changes.

    pytest --icl-claims [--icl-paper KEY]... [--icl-budget quick|default|paper]
           [--icl-tier symbolic,numeric,train] [--icl-expected FILE] [--icl-seed N]
           [--icl-device auto|cpu|cuda]

The expected verdicts live in a TOML file the user keeps (default: ``expected_verdicts.toml`` in
pytest's rootdir), one line per claim::

    "ahn2023.thm1" = "verified"

(``[ahn2023]`` tables with ``thm1 = "verified"`` and ``{verdict = "...", note = "..."}`` values
are read too; ``{verdict = "verified", proof = "gap"}`` also expects the proof's status:
supported, gap or not checked).  An item fails when the computed verdict differs from the expected one, or when
the file has no entry for the claim; the failure shows the verdict's reason, counterexample, each
tier's status and the command that reproduces it.  Items are named ``FILE::CLAIM_ID``, so ``-k``
selects claims.  The expected verdicts are those of the tiers you run (``--icl-tier``); a claim
that has none of them is skipped.

Registered through the ``pytest11`` entry point, the plugin is loaded by every pytest run where
the package is installed; without ``--icl-claims`` it adds nothing and imports nothing heavy.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

DEFAULT_EXPECTED = "expected_verdicts.toml"
from verify.expected import PROOF_NAMES, VERDICT_NAMES, read_expected  # noqa: F401


@dataclass(frozen=True)
class Settings:
    papers: tuple[str, ...]
    budget: str
    tiers: tuple[str, ...]
    seed: int
    device: str
    expected_path: Path
    expected: dict  # claim id -> verdict; empty when the file does not exist
    proofs: dict = None  # claim id -> the proof's expected status, where the file gives one


_SETTINGS = pytest.StashKey[Settings]()
_COMPUTED = pytest.StashKey[dict]()


def pytest_addoption(parser) -> None:
    group = parser.getgroup("icl-verify", "icl-verify: claims as test items")
    group.addoption("--icl-claims", action="store_true", default=False,
                    help="collect every icl-verify claim as a test item checked against its "
                         "expected verdict")
    group.addoption("--icl-paper", action="append", default=[], metavar="KEY",
                    help="only this paper's claims (repeatable)")
    group.addoption("--icl-budget", default="default", metavar="BUDGET",
                    help="quick | default | paper (default: default)")
    group.addoption("--icl-tier", default="symbolic,numeric,train", metavar="TIERS",
                    help="comma-separated tiers (default: symbolic,numeric,train)")
    group.addoption("--icl-expected", default=None, metavar="FILE",
                    help=f"TOML file of expected verdicts (default: {DEFAULT_EXPECTED} in the "
                         f"rootdir)")
    group.addoption("--icl-seed", default="0", metavar="N", help="seed of every check (default 0)")
    group.addoption("--icl-device", default="auto", metavar="DEVICE", help="auto | cpu | cuda")


def pytest_configure(config) -> None:
    if not config.getoption("icl_claims"):
        return
    config.addinivalue_line("markers", "icl_claim: an icl-verify claim checked against its "
                                       "expected verdict")
    config.stash[_SETTINGS] = _settings(config)
    config.stash[_COMPUTED] = {}


def _settings(config) -> Settings:
    """Validated options; bad input is a pytest usage error (one line, exit status 4)."""
    from models.device import DeviceUnavailable, resolve_device
    from verify import registry
    from verify.claim import BUDGETS, TIERS
    from verify.errors import UsageError

    try:
        budget = config.getoption("icl_budget")
        if budget not in BUDGETS:
            raise UsageError(f"--icl-budget {budget!r}: budgets are {', '.join(BUDGETS)}")
        text = config.getoption("icl_tier")
        tiers = tuple(t.strip() for t in text.split(",") if t.strip())
        if not tiers or any(t not in TIERS for t in tiers):
            raise UsageError(f"--icl-tier {text!r}: tiers are {', '.join(TIERS)}")
        seed_text = config.getoption("icl_seed")
        if not seed_text.isdigit():
            raise UsageError(f"--icl-seed {seed_text!r}: a non-negative integer")
        device = config.getoption("icl_device")
        resolve_device(device)
        papers = tuple(config.getoption("icl_paper"))
        for p in papers:
            registry.by_paper(p)
        given = config.getoption("icl_expected")
        path = Path(given) if given else Path(config.rootpath) / DEFAULT_EXPECTED
        if given and not path.is_file():
            raise UsageError(f"--icl-expected {given}: no such file")
        expected = read_expected(path) if path.is_file() else {}
        proofs = read_expected(path, "proof") if path.is_file() else {}
    except (UsageError, DeviceUnavailable) as exc:
        raise pytest.UsageError(f"icl-verify: {exc}") from None
    return Settings(papers, budget, tiers, int(seed_text), device, path.resolve(), expected,
                    proofs)


@pytest.hookimpl(tryfirst=True)  # before -k/-m deselection, so they apply to claims too
def pytest_collection_modifyitems(session, config, items) -> None:
    settings = config.stash.get(_SETTINGS, None)
    if settings is None:
        return
    from verify import registry

    claims = ([c for p in settings.papers for c in registry.by_paper(p)] if settings.papers
              else registry.all_claims())
    path = settings.expected_path
    try:
        nodeid = path.relative_to(Path(config.rootpath).resolve()).as_posix()
    except ValueError:  # a file outside the rootdir: its name is enough to select by
        nodeid = path.name
    holder = ExpectedVerdicts.from_parent(session, path=path, nodeid=nodeid)
    new = [ClaimItem.from_parent(holder, name=c.id, claim=c, settings=settings) for c in claims]
    items[:0] = new
    # tell the terminal (and other plugins) about them, as if collected from the file
    session.ihook.pytest_collectreport(report=pytest.CollectReport(
        holder.nodeid, "passed", None, new))


class ExpectedVerdicts(pytest.File):
    """The user's expected-verdicts file: the parent of the claim items."""

    def collect(self):  # items are made by pytest_collection_modifyitems
        return []


class VerdictChanged(Exception):
    """The computed verdict differs from the expected one (or none is expected)."""

    def __init__(self, verdict, expected: str | None, proof: str | None = None):
        what = (f"proof {proof}, computed proof {verdict.proof['status']}" if proof else
                f"{expected}, computed {verdict.verdict}")
        super().__init__(f"{verdict.claim}: expected {what}")
        self.verdict = verdict
        self.expected = expected
        self.proof = proof


class ClaimItem(pytest.Item):
    """One claim, checked with the run's options and compared with its expected verdict."""

    def __init__(self, *, claim, settings: Settings, **kwargs):
        super().__init__(**kwargs)
        self.claim = claim
        self.settings = settings
        self.expected = settings.expected.get(claim.id)
        self.add_marker("icl_claim")

    def runtest(self) -> None:
        from verify.runner import check_claim

        s = self.settings
        if not set(s.tiers) & set(self.claim.tiers):
            # nothing would run: its verdict under these tiers says nothing about the claim
            pytest.skip(f"{self.claim.id} has no {' or '.join(s.tiers)} tier "
                        f"(its tiers: {', '.join(self.claim.tiers)})")
        v = check_claim(self.claim, tiers=s.tiers, budget=s.budget, device=s.device, seed=s.seed)
        self.config.stash[_COMPUTED][self.claim.id] = v.verdict
        self.user_properties.append(("verdict", v.verdict))
        self.user_properties.append(("proof", v.proof["status"]))
        if v.verdict != self.expected:
            raise VerdictChanged(v, self.expected)
        proof = (s.proofs or {}).get(self.claim.id)
        if proof is not None and v.proof["status"] != proof:
            raise VerdictChanged(v, self.expected, proof)

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, VerdictChanged):
            return describe_change(excinfo.value, self.settings)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return self.path, None, f"claim {self.claim.id}"


def describe_change(exc: VerdictChanged, s: Settings) -> str:
    """The failure text: what changed, why, the evidence and the command that reproduces it."""
    v = exc.verdict
    if exc.expected is None:
        head = (f"{v.claim}: computed {v.verdict}, but {s.expected_path.name} has no expected "
                f"verdict for it; add the line\n    \"{v.claim}\" = \"{v.verdict}\"")
    elif exc.proof is not None:
        head = (f"{v.claim}: verdict {v.verdict} as expected, but its proof is "
                f"{v.proof['status']}, not {exc.proof}")
    else:
        head = f"{v.claim}: expected {exc.expected}, computed {v.verdict}"
    lines = [head, f"reason: {v.reason}"]
    gap = [f for f in v.proof.get("findings", []) if f["ok"] is False]
    if gap:
        lines.append("proof gap: " + "; ".join(f"{f['step']}: {f['what']}" for f in gap))
    if v.counterexample:
        lines.append("counterexample: " + _json(v.counterexample))
    if v.correction:
        lines.append(f"correction ({v.correction['source']}): {v.correction['description']}: "
                     + "; ".join(f"{n} = {t}" for n, t in v.correction["formulas"].items()))
        lines += [f"reading: {r['symbol']} at {r['where']} read as {r['read_as']} (the paper "
                  f"defines {r['paper_definition']})" for r in v.correction.get("readings", [])]
    lines.append("tiers:")
    for tier, r in v.tiers.items():
        lines.append(f"  {tier}: {r.status}" + (f" ({r.reason})" if r.reason else ""))
    lines.append(f"reproduce: icl-verify check {v.claim} --tier {','.join(s.tiers)} "
                 f"--budget {s.budget} --seed {s.seed} --device {s.device} --json")
    return "\n".join(lines)


def _json(value, limit: int = 2000) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= limit else text[:limit] + " ..."


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    settings = config.stash.get(_SETTINGS, None)
    if settings is None:
        return
    computed = config.stash.get(_COMPUTED, {})
    changed = {cid: v for cid, v in computed.items() if settings.expected.get(cid) != v}
    if not changed:
        return
    terminalreporter.section("icl-verify: verdicts that differ from "
                             f"{settings.expected_path.name}")
    terminalreporter.write_line("# computed verdicts (paste into the file to accept them):")
    for cid, verdict in changed.items():
        terminalreporter.write_line(f'"{cid}" = "{verdict}"')
