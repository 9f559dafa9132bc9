"""Symbols bound to the paper's definitions: declared once per paper, checked when a paper loads,
and an alternative reading only ever inside a correction."""
import json
import sys
import types

import pytest

from verify import registry
from verify.claim import Claim, Correction, TierResult
from verify.cli import main
from verify.definitions import Definition, Definitions, Reading
from verify.errors import UsageError
from verify.formulas import FormulaSymbol, NamedFormula

PAPER = "fake2099"
SIGMA = FormulaSymbol("Sigma", "matrix", ("d", "d"))
D = FormulaSymbol("d")
DEFS = (Definition("Sigma", "the empirical covariance X X^T / n", "eq. (3)"),
        Definition("Sigma_star", "the population covariance", "Sec. 2"),
        Definition("d", "the dimension", "Sec. 2"))


def fake_claim(symbols=(SIGMA, D), readings=(), number="1") -> Claim:
    return Claim(id=f"{PAPER}.lemma{number}", title="t", paper=PAPER, statement="s",
                 assumptions=(), formulas=(NamedFormula("f", "trace(Sigma)", tuple(symbols)),),
                 checks={"symbolic": lambda ctx: TierResult("pass")},
                 correction=None if not readings else Correction("c", "r", {"f": "d"}, readings))


def test_definitions_refuse_ambiguity():
    with pytest.raises(ValueError, match="twice paper-wide"):
        Definitions(PAPER, [DEFS[0], DEFS[0]])
    with pytest.raises(ValueError, match="names other2000"):
        Definitions(PAPER, [Definition("w", "a vector", "App. B", claims=("other2000.thm1",))])
    with pytest.raises(ValueError, match="required"):
        Definition("w", "a vector", " ")
    with pytest.raises(ValueError, match="as itself"):
        Reading("Sigma", "Sigma", "here", "why")


def test_local_definition_applies_only_to_its_claims():
    defs = Definitions(PAPER, [*DEFS, Definition("Sigma", "a local Sigma", "App. B",
                                                 claims=(f"{PAPER}.lemma2",))])
    assert defs.for_claim("Sigma", f"{PAPER}.lemma2").meaning == "a local Sigma"
    assert defs.for_claim("Sigma", f"{PAPER}.lemma1").equation == "eq. (3)"
    assert defs.for_claim("nothing", f"{PAPER}.lemma1") is None


def test_problems_name_the_unbound_symbol_and_the_other_reading():
    defs = Definitions(PAPER, DEFS)
    assert defs.problems(fake_claim()) == []
    undefined = defs.problems(fake_claim((SIGMA, D, FormulaSymbol("w"))))
    assert len(undefined) == 1 and "'w'" in undefined[0] and "do not define" in undefined[0]
    other = FormulaSymbol("Sigma", "matrix", ("d", "d"), "the population covariance Sigma*")
    [msg] = defs.problems(fake_claim((other, D)))
    assert "the paper defines it as 'the empirical covariance X X^T / n' (eq. (3))" in msg
    assert "Correction.readings" in msg
    bad = defs.problems(fake_claim(readings=(Reading("Sigma", "Sigma_hat", "there", "because"),)))
    assert len(bad) == 1 and "'Sigma_hat' is not defined" in bad[0]
    good = fake_claim(readings=(Reading("Sigma", "Sigma_star", "the outer factors", "because"),))
    assert defs.problems(good) == []
    view = defs.reading_view(good.correction.readings[0], good.id)
    assert view["paper_definition"] == "Sigma: the empirical covariance X X^T / n (eq. (3))"
    assert view["read_as"] == "Sigma_star: the population covariance (Sec. 2)"


@pytest.fixture
def fake_paper(monkeypatch):
    """A paper module the registry loads like the four (cache cleared before and after)."""
    module = types.ModuleType("fake_paper_module")
    monkeypatch.setitem(sys.modules, "fake_paper_module", module)
    monkeypatch.setitem(registry.paper_modules(), PAPER, "fake_paper_module")
    caches = (registry._module, registry._paper_claims, registry.definitions)
    for cache in caches:
        cache.cache_clear()
    yield module
    for cache in caches:
        cache.cache_clear()


def test_registry_refuses_a_paper_whose_symbols_are_unbound(fake_paper):
    fake_paper.CLAIMS = [fake_claim((SIGMA, D, FormulaSymbol("w")))]
    fake_paper.DEFINITIONS = DEFS
    with pytest.raises(UsageError, match="'w', which the paper's definitions"):
        registry.by_paper(PAPER)


def test_registry_refuses_a_local_definition_of_no_claim(fake_paper):
    fake_paper.CLAIMS = [fake_claim()]
    fake_paper.DEFINITIONS = (*DEFS, Definition("d", "x", "y", claims=(f"{PAPER}.thm7",)))
    with pytest.raises(UsageError, match="names fake2099.thm7, which is not a claim"):
        registry.by_paper(PAPER)


def test_every_claim_of_the_four_papers_is_bound():
    for paper in registry.papers():
        defs = registry.definitions(paper)
        for claim in registry.by_paper(paper):
            assert defs.problems(claim) == []
            assert all(defs.for_claim(s.name, claim.id) is not None
                       for f in claim.formulas for s in f.symbols)


def test_cli_lists_definitions_and_show_prints_them(capsys):
    assert main(["list", "--paper", "ahn2023", "--definitions", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)
    local = [r for r in rows if r.get("claims")]
    assert {r["symbol"] for r in rows} >= {"Sigma", "X", "w_star"}
    # local redefinitions (X of Lemma 2's proof, ...) name claims that exist, each once
    assert ["ahn2023.lemma2"] in [r["claims"] for r in local]
    ids = {c.id for c in registry.by_paper("ahn2023")}
    assert all(set(r["claims"]) <= ids for r in local)
    assert main(["show", "ahn2023.lemma2"]) == 0
    out = capsys.readouterr().out
    assert "Symbols, as the paper defines them:" in out and "X = [x^(1) ... x^(n)]" in out
    assert main(["list", "--definitions"]) == 2
    err = capsys.readouterr().err
    assert "needs --paper" in err and len(err.strip().splitlines()) == 1
