"""Mutation testing: mutants from the formulas' trees, their equivalence, and the kill rate."""
import json

import pytest
import sympy

from verify.cli import main
from verify.formulas import formula_str
from verify.mutants import OPERATORS, Equivalence, Mutant, claim_domain, equivalence, generate
from verify.mutate import Outcome, totals
from verify.registry import all_claims, find


def formula(claim_id, name):
    return find(claim_id).formula(name)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_every_operator_applies_to_eq_8():
    mutants, invalid = generate(formula("ahn2023.thm1", "A_top"))
    assert {m.operator for m in mutants} == set(OPERATORS)
    texts = {m.text for m in mutants}
    # the hand-written mutants of tests/proofs_checks are among the generated ones
    assert "-U*Inverse(((n + 2)/n)*Lambda + (trace(Lambda)/n)*Identity(d))*Transpose(U)" in texts
    assert "-U*Inverse(((n + 1)/n)*Lambda + (trace(Lambda)/n)*Identity(d))*U" in texts
    assert "-U*Inverse(((n + 1)/n)*Lambda)*Transpose(U)" in texts
    assert "U*Inverse(((n + 1)/n)*Lambda + (trace(Lambda)/n)*Identity(d))*Transpose(U)" in texts


def _assert_mutants_read_back_and_keep_shapes(claims) -> None:
    for claim in claims:
        for f in claim.formulas:
            original = formula_str(f.parse())
            mutants, _ = generate(f)
            assert len({m.text for m in mutants}) == len(mutants)
            for m in mutants:
                parsed = f.parse(m.text)  # reads back with the formula's own parser
                assert formula_str(parsed) != original, (claim.id, f.name, m.change)
                assert "Identity(n)" not in m.text and "(n, n)" not in m.text


# one claim per kind of formula: matrices with transposes and inverses (ahn2023 Thm 1, yang2024
# eq. (36)), block matrices (xie2025 Lemma 3), sums over indices (gatmiry2024 Cor. A.4), scalar
# bounds with hypotheses (gatmiry2024 Lemma 4.2)
READ_BACK_SAMPLE = ("ahn2023.thm1", "yang2024.eq36", "xie2025.lemma3", "gatmiry2024.cor_a4",
                    "gatmiry2024.lemma4_2")


def test_mutants_read_back_differ_and_never_touch_shapes():
    _assert_mutants_read_back_and_keep_shapes(find(c) for c in READ_BACK_SAMPLE)


@pytest.mark.slow
def test_every_claims_mutants_read_back_differ_and_never_touch_shapes():
    _assert_mutants_read_back_and_keep_shapes(all_claims())


def test_ill_typed_mutants_are_invalid_not_counted():
    mutants, invalid = generate(formula("ahn2023.lemma2", "prediction"))
    assert invalid and all(i.operator == "transpose" for i in invalid)
    assert all("must be 1x1" in i.error or "ill-typed" in i.error for i in invalid)
    assert not any(m.text == i.text for m in mutants for i in invalid)


def test_a_matrix_power_in_a_size_other_than_L_is_an_invalid_mutant():
    """The loss checks expand (I - A Sigma A)^(2L) for each loop count L; 2n or 2d in the
    exponent is rejected like an ill-typed text (it was an 'inconclusive' survivor)."""
    mutants, invalid = generate(formula("gatmiry2024.lemma_a6", "lhs"))
    assert {i.text for i in invalid} == {"trace((Identity(d) - A_half*Sigma*A_half)**(2*d))"}
    assert all("exponents here may only use L" in i.error for i in invalid)
    # n is not a symbol of the claim's formulas (only d sizes its matrices): no swap into it
    assert not any("2*n" in m.text for m in mutants)
    assert "trace((Identity(d) - A_half*Sigma*A_half)**(3*L))" in {m.text for m in mutants}


def test_transposed_power_is_equivalent_without_expanding_a_symbolic_power():
    """With symbolic entries tr (I - A' Sigma A)^(2L) at L = 5 expands to millions of terms (7 GB
    and four minutes per mutant); the illustration is skipped above PROOF_MAX_POWER and the
    exact sampling decides."""
    from verify import equivalence as M

    f = formula("gatmiry2024.lemma_a6", "lhs")
    assert M._symbolic_degree_too_high(f.parse(), M.size_assignments(f)[0])
    eq = equivalence(f, "trace((Identity(d) - Transpose(A_half)*Sigma*A_half)**(2*L))")
    assert eq.kind in ("identity", "assumptions") and "expands to 0" not in eq.detail


@pytest.mark.parametrize("text,kind,words", [
    ("n >= 5*d**2*k**2", "implied", "narrower hypothesis"),     # a larger threshold
    ("d >= 4*d**2*k**2", "implied", "vacuous"),                 # holds for no positive sizes
    ("n >= 3*d**2*k**2", "none", "where the original does not"),  # a wider hypothesis
    ("n >= 4*k**4", "none", "where the original does not"),
])
def test_a_narrower_hypothesis_is_implied_a_wider_one_is_not(text, kind, words):
    eq = equivalence(formula("gatmiry2024.lemma_a2", "hypothesis"), text)
    assert eq.kind == kind and words in eq.detail, eq


def test_a_bound_between_the_proofs_and_the_printed_one_is_implied_by_the_proof():
    """Printed 2x, the proof gives x: 3x/2 is tighter than printed but proved; x/2 is not."""
    import sympy

    from verify.formulas import FormulaSymbol, NamedFormula

    x = FormulaSymbol("x", positive=True)
    f = NamedFormula("b", "2*x", (x,), weaker="larger",
                     proof=lambda: sympy.Symbol("x", positive=True))
    eq = equivalence(f, "3*x/2")
    assert eq.kind == "implied" and "implied by the paper's proof" in eq.detail
    assert equivalence(f, "x").kind == "implied"                  # the proof's bound itself
    eq = equivalence(f, "x/2")
    assert eq.kind == "none" and "smaller) than the proof's bound" in eq.detail


def test_yang2024_bounds_carry_the_chain_of_their_proofs():
    from proofs_checks.yang2024.convergence import thm1_L_sq_chain
    from proofs_checks.yang2024.gradient_bounds import lemma8_chain, lemma10_chain

    assert find("yang2024.thm1").formula("L_sq").proof() == thm1_L_sq_chain()
    assert find("yang2024.lemma10").formula("L_sq").proof() == lemma10_chain()["L_sq"]
    assert find("yang2024.lemma8").formula("b_lip").proof() == lemma8_chain()["b_lip"]


def test_bounds_are_compared_on_the_claims_domain_hypotheses_and_definitions():
    """Thm A.8's c = 8 delta d^(1/(2L)) with delta := (8 L d / sqrt(n))^(1/(2L)) and the
    hypothesis delta d^(1/(2L)) < 1/2: replacing delta by L is looser wherever the claim speaks
    (delta < 1/2 <= L), although not for a free positive delta; 7 instead of 8 is tighter."""
    claim = find("gatmiry2024.thm_a8")
    domain = claim_domain(claim.formulas)
    assert "delta := " in domain.words and "delta*d**(1/(2*L)) < 1/2" in domain.words
    c = claim.formula("c")
    assert equivalence(c, "8*L*d**(1/(2*L))").kind == "none"               # delta free
    eq = equivalence(c, "8*L*d**(1/(2*L))", domain=domain)
    assert eq.kind == "implied" and "claim's domain" in eq.detail
    eq = equivalence(c, "7*d**(1/(2*L))*delta", domain=domain)
    assert eq.kind == "none" and "tighter" in eq.detail
    assert claim_domain(find("ahn2023.thm1").formulas) is None             # no hypotheses


@pytest.mark.parametrize("text,kind,words", [
    ("(9*L*d/sqrt(n))**(1/(2*L))", "implied", "a weaker claim"),   # larger delta: looser bounds
    ("(8*L*d*sqrt(n))**(1/(2*L))", "implied", "vacuous"),          # delta >= 1: no point admitted
    ("(7*L*d/sqrt(n))**(1/(2*L))", "none", "loss_bound is tighter"),
    ("-(8*L*d/sqrt(n))**(1/(2*L))", "none", "a wider claim"),      # the hypothesis always holds
])
def test_a_mutant_definition_is_judged_by_the_whole_claim(text, kind, words):
    """Thm A.8 uses delta := (8 L d / sqrt(n))^(1/(2L)) in its hypothesis and its three bounds:
    a mutant definition is implied only when the claim with it is weaker everywhere drawn."""
    claim = find("gatmiry2024.thm_a8")
    eq = equivalence(claim.formula("delta"), text, domain=claim_domain(claim.formulas))
    assert eq.kind == kind and words in eq.detail, eq
    assert (eq.stronger is not None) == (text == "(7*L*d/sqrt(n))**(1/(2*L))" or text[0] == "-")


def test_a_definition_mutant_that_leaves_the_claim_unchanged_is_equivalent():
    """Thm A.11 uses delta only through (4 delta)^{2L}: -delta is the same claim."""
    claim = find("gatmiry2024.thm_a11")
    domain = claim_domain(claim.formulas, dict(claim.correction.formulas))
    eq = equivalence(claim.formula("delta"), "-(8*L*d/sqrt(n))**(1/(2*L))", domain=domain)
    assert eq.kind == "identity" and "same statement" in eq.detail, eq


@pytest.mark.parametrize("text,kind", [
    ("(9*L*d/sqrt(n))**(1/(2*L))", "implied"),   # xi >= 2 (4 delta)^{2L} narrows by 9/8 only
    ("(7*L*d/sqrt(n))**(1/(2*L))", "none"),      # a wider hypothesis
])
def test_a_definition_that_narrows_a_hypothesis_rarely_met_is_implied_by_a_proof(text, kind):
    """Thm A.12 uses delta only in xi >= 2 (4 delta)^{2L}: 9 for 8 moves the threshold by a factor
    9/8, between which the draws of xi (log-uniform over decades) seldom fall, so the sampling
    saw the same truth values everywhere and the mutant survived.  With the definitions put in,
    the mutant's hypothesis gives the original's by the gap 2 16^L L d / sqrt(n) >= 0."""
    from verify.implication_proofs import _definition_proof

    claim = find("gatmiry2024.thm_a12")
    domain = claim_domain(claim.formulas, dict(claim.correction.formulas), claim.exact,
                          claim.ranges)
    delta = claim.formula("delta")
    eq = equivalence(delta, text, domain=domain)
    assert eq.kind == kind, eq
    if kind == "implied":
        assert "the gap being 2*16**L*L*d/sqrt(n) >= 0" in eq.detail, eq.detail
    assert not _definition_proof("delta", delta.parse(text.replace("9", "7")), domain)
    assert not _definition_proof("delta", delta.parse("(L*d/sqrt(n))**(1/(2*L))"), domain)


def test_a_tighter_bound_and_a_wider_hypothesis_are_labelled_stronger():
    """A survivor that claims more than the paper everywhere is told apart from one that is
    tighter somewhere and looser elsewhere (the checks must refute the latter if it is false)."""
    claim = find("gatmiry2024.lemma_a2")
    hyp = claim.formula("hypothesis")
    assert "stronger claim" in equivalence(hyp, "n >= 3*d**2*k**2").stronger
    assert equivalence(hyp, "n >= 4*k**4").stronger is None
    c = find("gatmiry2024.thm_a8")
    eq = equivalence(c.formula("c"), "7*d**(1/(2*L))*delta", domain=claim_domain(c.formulas))
    assert eq.kind == "none" and "stronger claim" in eq.stronger


def test_equivalence_by_simplification():
    f = formula("ahn2023.thm1", "A_iso")
    eq = equivalence(f, "-n/(n + d + 1)")
    assert eq.kind == "simplification" and "= 0" in eq.detail


def test_equivalence_as_an_identity_is_shown_with_symbolic_entries():
    eq = equivalence(formula("ahn2023.lemma2", "prediction"), "-Transpose(w)*x_q")
    assert eq.kind == "identity"
    assert "symbolic entries" in eq.detail and "expands to 0" in eq.detail


def test_equivalence_under_the_claims_symmetry_assumption():
    eq = equivalence(formula("ahn2023.lemma2", "update"), "w + Transpose(A)*grad")
    assert eq.kind == "assumptions" and "A symmetric" in eq.detail
    assert eq.witness  # the generic, non-symmetric instance where the two differ


def test_non_equivalent_mutant_has_a_witness():
    eq = equivalence(formula("ahn2023.thm1", "A_top"),
                     "-Transpose(U)*Inverse(((n + 1)/n)*Lambda + (trace(Lambda)/n)*Identity(d))"
                     "*Transpose(U)")
    assert eq.kind == "none"
    w = eq.witness
    assert set(w) >= {"sizes", "values", "entry", "original", "mutant"}
    assert w["original"] != w["mutant"]


def test_lemma2_update_mutants_are_all_killed(capsys):
    code, out, _ = run(capsys, "mutate", "ahn2023.lemma2", "--formula", "update", "--tier",
                       "numeric", "--json")
    report = json.loads(out)
    t = report["totals"]
    assert code == 0 and (t["claims_mutated"], t["claims_skipped"]) == (1, 0)
    assert t["survived"] == 0 and t["false_alarms"] == 0 and t["kill_rate_non_equivalent"] == 1
    (f,) = report["claims"][0]["formulas"]
    equivalent = [m for m in f["mutant_results"] if m["status"] == "equivalent"]
    assert [m["text"] for m in equivalent] == ["w + Transpose(A)*grad"]
    assert "equivalent under the claim's assumptions" in equivalent[0]["reason"]
    assert all(m["killed_by"] == ["numeric"] for m in f["mutant_results"]
               if m["status"] == "killed")


def test_a_sign_a_claim_defines_is_not_set_aside(capsys):
    # yang2024's delta_k is sign-free in Lemma 5 (only ||Zbar delta_k||^2 occurs) but (33) defines
    # it, sign included (the gradient (45) uses it): the negation must be killed, not counted as a
    # false alarm of a check that refutes a true statement
    code, out, _ = run(capsys, "mutate", "yang2024.eq33", "--formula", "delta_query", "--json")
    report = json.loads(out)
    t = report["totals"]
    assert code == 0 and t["false_alarms"] == 0 and t["survived"] == 0, t
    (f,) = report["claims"][0]["formulas"]
    (neg,) = [m for m in f["mutant_results"] if m["change"] == "negate the whole formula"]
    assert neg["status"] == "killed"


def test_a_tier_that_cannot_see_a_formula_lets_its_mutants_survive(capsys):
    # the numeric tier of Thm. 1 never reads A_scale (the symbolic tier checks the rescaling):
    # run alone, every mutant of A_scale survives, as inconclusive (a tier that does not read a
    # formula cannot support it), and mutate says so and exits 1
    code, out, _ = run(capsys, "mutate", "ahn2023.thm1", "--formula", "A_scale", "--tier",
                       "numeric")
    assert code == 1
    assert "Surviving non-equivalent mutants (weak checks):" in out
    assert "ahn2023.thm1 A_scale = gamma**(-2)" in out
    assert "the checks did not refute it (verdict inconclusive" in out
    assert "does not read A_scale" in out
    assert "it differs from the original at (gamma=" in out


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_a_claim_that_does_not_pass_as_printed_is_not_mutated(capsys):
    # float64 overflows at this Sigma: Thm. 1 is inconclusive in the numeric tier, and mutants
    # of a formula that does not pass would say nothing about the checks
    code, out, _ = run(capsys, "mutate", "ahn2023.thm1", "--formula", "b_y", "--tier", "numeric",
                       "--sigma", "diag:1e150,1", "--json")
    report = json.loads(out)
    (claim,) = report["claims"]
    assert claim["skipped"].startswith("it is inconclusive as printed") and not claim["formulas"]
    assert report["totals"]["claims_skipped"] == 1 and report["totals"]["mutants"] == 0
    assert code == 0


def test_report_counts_and_false_alarms():
    m = Mutant("f", "sign", "negate", "-x")
    outcomes = [Outcome(m, "refuted", ["numeric"], Equivalence("none", ""), "x"),
                Outcome(m, "verified", [], Equivalence("identity", "equal"), "y"),
                Outcome(m, "refuted", ["symbolic"], Equivalence("identity", "equal"), "z"),
                Outcome(m, "inconclusive", [], Equivalence("none", "differs"), "w")]
    assert [o.status for o in outcomes] == ["killed", "equivalent", "false_alarm", "survived"]
    assert "refuted although equivalent" in outcomes[2].explanation()
    from verify.mutate import ClaimReport, FormulaReport

    report = ClaimReport("a.thm1", "verified", "", [FormulaReport("a.thm1", "f", outcomes)])
    t = totals([report])
    assert (t["mutants"], t["killed"], t["equivalent"], t["survived"], t["false_alarms"]) == \
        (4, 2, 2, 1, 1)
    assert t["kill_rate_non_equivalent"] == 0.5  # 1 of the 2 non-equivalent mutants


@pytest.mark.slow
@pytest.mark.xfail(run=False, reason="open target of the reliability issue: bounds tighter than "
                   "printed but still true (gatmiry2024 Lemma A.2's upper bound, Thm 3.4's rhs), "
                   "wider hypotheses under which the bounds still hold, and yang2024 Thm 2's "
                   "T_min and tail survive; `mutate --all` takes hours on 2 cores")
def test_every_non_equivalent_mutant_of_every_claim_is_killed(capsys):
    """The issue's target: icl-verify mutate --all kills 100% of non-equivalent mutants."""
    code, out, _ = run(capsys, "mutate", "--all", "--json")
    t = json.loads(out)["totals"]
    assert t["survived"] == 0 and t["false_alarms"] == 0, t
    assert code == 0


@pytest.mark.slow
@pytest.mark.parametrize("args", [["--paper", "xie2025"], ["--paper", "ahn2023"],
                                  ["gatmiry2024.lemma_a6", "gatmiry2024.lemma4_1"]])
def test_every_non_equivalent_mutant_is_killed_where_reached(capsys, args):
    """Where the target is reached, it stays reached (2026-11-22: xie2025 192/192 in 68 s, now
    187/192 with five best-step reparametrisations of Fig. 5's eta, same statements,
    ahn2023 186/186 in 3 min, gatmiry2024 Lemmas A.6 and 4.1 86/86 in 2 min; Lemma A.3,
    177/177, takes 4 min and is left out)."""
    code, out, _ = run(capsys, "mutate", *args, "--json")
    report = json.loads(out)
    t = report["totals"]
    survivors = {(c["claim"], f["formula"], m["text"]) for c in report["claims"]
                 for f in c["formulas"] for m in f["mutant_results"] if m["status"] == "survived"}
    # xie2025 Fig. 5 compares y_q-LSA with one-step GD *at its best step size*: a mutant that
    # only rescales or reparametrises eta over (0, oo) (2 eta / C, eta, eta / C^2, eta / d,
    # C / eta for eta / C) states the same comparison. Since the figure audit (e61df1b) the
    # numeric tier's Monte Carlo at d = 3, C = 6 is a stand-in for the paper's d = C = 10, so
    # nothing at quick sizes tells them apart (at --size d=10 --size C=10 16 of 17 are killed)
    allowed = {("xie2025.fig5", "w1", f"({step})*Transpose(X)*(X*w_star - y) + w_star")
               for step in ("-2*eta/C", "-eta", "-eta/C**2", "-eta/d", "-C/eta")}
    assert survivors <= allowed, survivors - allowed
    assert t["survived"] == len(survivors) and t["false_alarms"] == 0, t
    assert code == (1 if survivors else 0)   # mutate exits 1 while a mutant survives


def test_block_matrix_mutants_mutate_inside_the_blocks():
    # eq. (7)'s W^V: the grid keeps its 2 x 2 shape; constants, signs and transposes are mutated
    # inside the blocks, and a block that no longer fits its row or column is reported as such
    f = formula("xie2025.eq8", "W_V")
    mutants, invalid = generate(f)
    texts = {m.text for m in mutants}
    assert ("BlockMatrix([[OneMatrix(d, d), ZeroMatrix(d, 1)], [Transpose(w_star), "
            "-Identity(1)]])") in texts
    assert ("BlockMatrix([[ZeroMatrix(d, d), ZeroMatrix(d, 1)], [Transpose(w_star), "
            "-2*Identity(1)]])") in texts
    for m in mutants:
        assert f.parse(m.text).shape == f.parse().shape
    assert invalid and all("of the block grid" in i.error for i in invalid)
    for cid, name in (("xie2025.eq8", "W_K"), ("xie2025.lemma3", "W_1"), ("xie2025.lemma3", "W_3")):
        ms, inv = generate(formula(cid, name))
        assert ms and not any("List length" in i.error for i in inv), (cid, name)


def test_block_matrix_mutants_are_killed(capsys):
    code, out, _ = run(capsys, "mutate", "xie2025.eq8", "--formula", "W_K", "--tier",
                       "symbolic", "--json")
    report = json.loads(out)
    (f,) = report["claims"][0]["formulas"]
    assert f["mutants"] >= 4 and f["invalid"] == 0
    assert all(m["text"].startswith(("BlockMatrix", "-BlockMatrix"))
               for m in f["mutant_results"])
    assert report["totals"]["survived"] == 0 and code == 0


# ---------------------------------------------------------------------------------- implied mutants
from verify.formulas import FormulaSymbol, NamedFormula  # noqa: E402

_X = FormulaSymbol("x", positive=True)
_Y = FormulaSymbol("y", positive=True)
_N = FormulaSymbol("N")
_DELTA = FormulaSymbol("delta", positive=True, unit=True, description="failure probability")


def bound(text, symbols=(_X, _Y), weaker="larger"):
    return NamedFormula("b", text, tuple(symbols), weaker=weaker)


def test_a_looser_constant_of_an_upper_bound_is_implied_by_proof():
    eq = equivalence(bound("2*x*y"), "3*x*y")
    assert eq.kind == "implied" and eq.equivalent
    assert "(3*x*y)/(2*x*y) = 3/2 >= 1" in eq.detail and "looser upper bound" in eq.detail
    # the paper's own constant of yang2024 Lemma 2
    assert equivalence(formula("yang2024.lemma2", "C"), "3").kind == "implied"


def test_an_implication_sympy_cannot_prove_is_decided_by_sampling(monkeypatch):
    assert equivalence(bound("log(1 + x)", (_X,)), "x").kind == "implied"
    import verify.implication as implication

    monkeypatch.setattr(implication, "_implied_proof", lambda *a: "")  # no proof: sampling stands
    eq = equivalence(bound("2*x*y"), "3*x*y")
    assert eq.kind == "implied"
    assert "mutant >= original at all 60 instances of the domain (strictly at 60" in eq.detail
    assert "mutant/original from 1.5 to 1.5" in eq.detail
    eq = equivalence(bound("sqrt(N + 2*log(1/delta))", (_N, _DELTA)),
                     "(N + 2*log(1/delta))**(3/2)")
    assert eq.kind == "implied" and "delta in (0, 1)" in eq.detail


def test_a_tighter_constant_is_not_implied():
    eq = equivalence(bound("2*x*y"), "x*y")
    assert eq.kind == "none" and not eq.equivalent and eq.witness
    assert "tighter (smaller) than the original" in eq.detail
    assert equivalence(formula("yang2024.lemma2", "C"), "1/2").kind == "none"  # below the sharp 1


def test_a_swap_larger_at_some_instances_and_smaller_at_others_is_not_implied():
    eq = equivalence(bound("x**2*y"), "x*y**2")
    assert eq.kind == "none" and "tighter" in eq.detail
    # a mutant with no real value where the original has one is not implied either
    eq = equivalence(bound("x + y"), "x + y + sqrt(1 - x)")
    assert eq.kind == "none" and "not a finite real number" in eq.detail


def test_a_unit_domain_symbol_is_drawn_in_0_1():
    f = bound("x*log(1/delta)", (_X, _DELTA))
    eq = equivalence(f, "2*x*log(1/delta)")
    assert eq.kind == "implied" and "= 2 >= 1" in eq.detail
    # without the (0, 1) domain, log(1/delta) < 0 for delta > 1: twice it is a tighter bound
    g = bound("x*log(1/delta)", (_X, FormulaSymbol("delta", positive=True)))
    assert equivalence(g, "2*x*log(1/delta)").kind == "none"
    assert FormulaSymbol("delta", unit=True).sympy().is_positive


def test_a_lower_bound_is_looser_when_smaller():
    f = bound("x/2", (_X,), weaker="smaller")
    eq = equivalence(f, "x/3")
    assert eq.kind == "implied" and "looser lower bound" in eq.detail
    eq = equivalence(f, "x")
    assert eq.kind == "none" and "tighter (larger)" in eq.detail


def test_a_formula_not_marked_as_a_bound_has_no_implied_mutants():
    f = NamedFormula("b", "2*x*y", (_X, _Y))
    assert equivalence(f, "3*x*y").kind == "none"


def test_a_killed_implied_mutant_is_a_false_alarm():
    from verify.mutate import ClaimReport, FormulaReport

    m = Mutant("f", "constant", "2 -> 3", "3*x")
    implied = Equivalence("implied", "implied: (3*x)/(2*x) = 3/2 >= 1")
    outcomes = [Outcome(m, "verified", [], implied, "ok"),
                Outcome(m, "refuted", ["numeric"], implied, "numeric: the bound is exceeded"),
                Outcome(m, "refuted", ["numeric"], Equivalence("none", "differs"), "x"),
                Outcome(m, "verified", [], Equivalence("identity", "equal"), "y")]
    assert [o.status for o in outcomes] == ["implied", "false_alarm", "killed", "equivalent"]
    assert outcomes[0].explanation().startswith("implied: (3*x)/(2*x) = 3/2 >= 1")
    assert "weaker statement the original implies" in outcomes[0].explanation()
    assert "refuted although implied" in outcomes[1].explanation()
    report = ClaimReport("a.thm1", "verified", "", [FormulaReport("a.thm1", "f", outcomes)])
    c = report.formulas[0].counts()
    assert (c["implied"], c["equivalent"], c["false_alarms"], c["non_equivalent"]) == (2, 1, 1, 1)
    t = totals([report])
    assert t["implied"] == 2 and t["kill_rate_non_equivalent"] == 1.0 and t["false_alarms"] == 1
    from verify.mutate import table

    text = table([report])
    assert "Implied mutants (weaker bounds: true consequences, survive as they must):" in text
    assert "False alarms (equivalent or implied mutants refuted):" in text


def test_weaker_and_unit_are_validated():
    with pytest.raises(ValueError, match="weaker"):
        NamedFormula("b", "x", (_X,), weaker="bigger")
    with pytest.raises(ValueError, match="scalar"):
        NamedFormula("b", "Identity(d)", (FormulaSymbol("d"),), shape=("d", "d"), weaker="larger")
    with pytest.raises(ValueError, match="unit"):
        FormulaSymbol("A", "matrix", ("d", "d"), unit=True)
    f = NamedFormula("b", "x", (_X, _DELTA), weaker="smaller")
    d = f.as_dict()
    assert d["weaker"] == "smaller" and {"name": "delta", "kind": "scalar", "unit": True,
                                         "description": "failure probability"} in d["symbols"]


def test_implied_mutants_in_the_json_report(capsys):
    import jsonschema

    from verify.schema import load

    code, out, _ = run(capsys, "mutate", "yang2024.lemma2", "--tier", "symbolic", "--json")
    report = json.loads(out)
    jsonschema.validate(report, load("mutate"))
    (f,) = report["claims"][0]["formulas"]
    by_text = {m["text"]: m for m in f["mutant_results"]}
    assert by_text["3"]["status"] == "implied" and by_text["3"]["equivalence"]["kind"] == "implied"
    assert by_text["1"]["status"] == "implied"          # the sharp constant the tier derives
    assert f["implied"] == 2 and report["totals"]["implied"] == 2
    assert f["non_equivalent"] == f["killed"] + f["survived"] == 1


def test_small_scalar_values_separate_mutants_that_agree_on_integers():
    """Max(0, 4 K alpha^2) equals Max(1, 4 K alpha^2) at every integer alpha >= 1 (yang2024 eq.
    (61)): the equivalence draws include values in (0, 1), where they differ."""
    from proofs_checks.yang2024.gradient_bounds import L61_CORRECTED, LEMMA10

    f = LEMMA10.formula("L_sq")
    mutant = L61_CORRECTED.replace("Max(1,", "Max(0,")
    assert mutant != L61_CORRECTED
    eq = equivalence(f, mutant, base=L61_CORRECTED)
    assert eq.kind == "none", eq.as_dict()


def test_positive_multiple_of_a_scale_free_hypothesis_is_equivalent():
    """ahn2023 Thm 3 is the same statement for Sigma_x = c I, c > 0 (declared scale_free)."""
    f = find("ahn2023.thm3").formula("Sigma_x")
    eq = equivalence(f, "2*Identity(d)")
    assert eq.kind == "scale" and eq.equivalent, eq.as_dict()
    assert "positive multiple" in eq.detail
    assert equivalence(f, "-Identity(d)").kind == "none"
    assert equivalence(f, "OneMatrix(d, d)").kind == "none"


def test_scale_is_only_for_formulas_declared_scale_free():
    f = find("ahn2023.lemma8").formula("P_top")
    assert not f.scale_free
    g = find("xie2025.eq8").formulas[0]
    assert equivalence(g, f"2*({g.text})").kind in ("none", "implied")


def test_a_condition_is_never_declared_equivalent_by_sampling():
    # gatmiry2024's hypotheses are conditions: at the small size patterns n >= 4 k^2 d^2 is false
    # for the original and every mutant alike, which says nothing; they stay non-equivalent
    # (before, evaluating a condition raised AttributeError and stopped `mutate --paper gatmiry2024`)
    # (before, evaluating a condition raised AttributeError and stopped `mutate --paper gatmiry2024`);
    # a hypothesis marked weaker="narrower" may still be *implied* (decided over the domain, not
    # at the size patterns), which is not equivalence
    f = formula("gatmiry2024.lemma_a2", "hypothesis")
    eq = equivalence(f, "n >= 5*d**2*k**2")
    assert eq.kind == "implied" and "identity" not in eq.detail
    eq = equivalence(f, "n >= 3*d**2*k**2")
    assert eq.kind == "none" and not eq.equivalent


def test_tiers_run_cheapest_first_as_measured_on_the_baseline():
    from verify.claim import TierResult
    from verify.mutate import tier_order

    slow_numeric = {"numeric": TierResult("pass", seconds=9.0),
                    "symbolic": TierResult("pass", seconds=0.5)}
    assert tier_order(["numeric", "symbolic"], slow_numeric) == ["symbolic", "numeric"]
    assert tier_order(["symbolic", "numeric"], {}) == ["numeric", "symbolic"]   # ties: TIER_COST


def test_a_lower_bound_below_the_derived_envelope_is_implied_by_it():
    """gatmiry2024 Lemma A.5: alpha^(j) >= lambda_j^k (non-negative Wishart coefficients), so
    lambda_j^k - d lambda_1^k is a true lower bound although it is tighter than the printed one
    where d < delta; lambda_j^n - delta lambda_1^k is above lambda_j^k and stays a survivor."""
    claim = find("gatmiry2024.lemma_a5")
    fixed = dict(claim.correction.formulas)
    domain = claim_domain(claim.formulas, fixed)
    f = formula("gatmiry2024.lemma_a5", "lower")
    eq = equivalence(f, "-d*lambda_1**k + lambda_j**k", domain=domain)
    assert eq.kind == "implied" and "non-negative" in eq.detail, eq.detail
    assert equivalence(f, "-delta*lambda_1**k + lambda_j**n", domain=domain).kind == "none"


def test_a_symbol_bounded_by_another_is_drawn_below_it():
    """gatmiry2024's lambda_j is at most lambda_1 (the largest eigenvalue): the implication test
    draws it there, so 2 lambda_1^2 is a looser upper bound than lambda_j^2 + lambda_1^2."""
    import numpy as np

    from verify.formulas import FormulaSymbol, NamedFormula
    from verify.implication import _draw_domain

    f = formula("gatmiry2024.lemma4_2", "upper")
    rng = np.random.default_rng(0)
    for _ in range(50):
        v = _draw_domain(f.symbols, rng, None)
        assert 0 < v["lambda_j"] <= v["lambda_1"]
    lam_j = FormulaSymbol("lambda_j", positive=True, at_most="lambda_1")
    lam_1 = FormulaSymbol("lambda_1", positive=True)
    upper = NamedFormula("upper", "lambda_j**2 + lambda_1**2", (lam_j, lam_1), weaker="larger")
    assert equivalence(upper, "2*lambda_1**2").kind == "implied"
    with pytest.raises(ValueError, match="at_most"):
        FormulaSymbol("n", at_most="d")


def test_a_bounded_scalar_equals_its_bound_in_some_draws():
    """s_min <= s_max (Thm A.13): Sigma^out = c I has s_min = s_max, where the mutant window
    s_min >= s_max holds; with u in (0, 1) only it was judged vacuous (implied), and the
    symbolic tier's refutation at Sigma^out = c I counted as a false alarm."""
    import numpy as np

    from verify.formulas import FormulaSymbol
    from verify.implication import _draw_domain

    s_min = FormulaSymbol("s_min", positive=True, at_most="s_max")
    s_max = FormulaSymbol("s_max", positive=True)
    rng = np.random.default_rng(0)
    draws = [_draw_domain((s_min, s_max), rng, None) for _ in range(400)]
    equal = sum(v["s_min"] == v["s_max"] for v in draws)
    assert all(v["s_min"] <= v["s_max"] for v in draws) and 20 <= equal <= 70
    f = formula("gatmiry2024.thm_a13", "condition")
    assert equivalence(f, "(s_min >= s_max) & (s_max <= 2 - zeta)").kind == "none"


def test_a_scalar_near_a_range_is_drawn_there_half_the_time():
    """gatmiry2024 Thm 4.5's s_max lies in its window [1, 2 - zeta]: over [10^-3, 10^3] alone a
    draw lands there once in twenty, too rarely to reach the points its exact values need."""
    import numpy as np

    from verify.formulas import FormulaSymbol
    from verify.implication import _draw_domain

    s_max = FormulaSymbol("s_max", positive=True, near=(1, 2))
    rng = np.random.default_rng(0)
    inside = sum(bool(1 <= _draw_domain((s_max,), rng, None)["s_max"] <= 2) for _ in range(400))
    assert 180 <= inside <= 260
    with pytest.raises(ValueError, match="near"):
        FormulaSymbol("s", near=(2, 1))


def test_a_bound_at_least_the_derived_sharp_one_is_implied(capsys):
    """yang2024 Lemma 2 prints C = 2; its symbolic tier derives the least constant 1, so C = 1 is
    a true statement (implied by the sharp bound) and C = 1/2 is false and refuted."""
    f = formula("yang2024.lemma2", "C")
    eq = equivalence(f, "1")
    assert eq.kind == "implied" and "sharp bound the checks derive" in eq.detail
    assert equivalence(f, "1/2").kind == "none"
    assert main(["mutate", "yang2024.lemma2", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["totals"]["survived"] == 0 and out["totals"]["kill_rate_non_equivalent"] == 1


def test_equivalence_under_a_relation_the_claim_assumes_and_a_sign_it_ignores():
    """yang2024 Lemma 5: a prompt token's z_k is Z e_k with e_k one-hot, so c_k = 0 and its
    negation is the same constant; delta_k enters only through ||Zbar delta_k||^2, so -delta_k
    is the same statement.  Twice delta_k, or c_k + 1, is not."""
    claim = find("yang2024.lemma5")
    fixed = dict(claim.correction.formulas)
    c = claim.formula("c_prompt")
    eq = equivalence(c, f"-({c.text})")
    assert eq.kind == "assumptions" and "z_k = Z*e_k" in eq.detail
    assert equivalence(c, f"{c.text} + 1").kind == "none"
    d = claim.formula("delta_prompt")
    eq = equivalence(d, f"-({fixed['delta_prompt']})", base=fixed["delta_prompt"])
    assert eq.kind == "scale" and "negation" in eq.detail
    assert equivalence(d, f"2*({fixed['delta_prompt']})", base=fixed["delta_prompt"]).kind == "none"


def test_a_hypothesis_is_compared_with_the_claims_definitions_and_large_sizes():
    """gatmiry2024 Thm A.11: 2 (4 n)^{2L} is not a narrower threshold than 2 (4 delta)^{2L} once
    delta takes its defined value (n = 1, d = 100: 32 against 25600); Thm 3.4's
    d >= 64 L d / sqrt(n) holds from n = 4096 on, so it is not vacuous (sizes were drawn up to
    1000 only, and both came out implied while the checks refuted them)."""
    for cid, text in (("gatmiry2024.thm_a11", "loss >= 2*(4*n)**(2*L)"),
                      ("gatmiry2024.thm3_4", "d >= 16*4**L*L*d/sqrt(n)")):
        claim = find(cid)
        domain = claim_domain(claim.formulas, dict(claim.correction.formulas))
        eq = equivalence(claim.formula("hypothesis"), text, domain=domain)
        assert eq.kind == "none" and "where the original does not" in eq.detail, (cid, eq)


def test_the_stream_has_one_line_per_mutant_then_the_totals(capsys, tmp_path):
    """--jsonl has one line per mutant as it is decided, then the totals; --mutant-timeout is
    recorded in the JSON (the limit itself: the next test, which does not depend on timing)."""
    import jsonschema

    from verify.schema import load

    path = tmp_path / "run.jsonl"
    code, out, _ = run(capsys, "mutate", "gatmiry2024.lemma_a2", "--formula", "lower",
                       "--mutant-timeout", "600", "--mutant-memory", "4", "--jsonl", str(path),
                       "--json")
    report = json.loads(out)
    jsonschema.validate(report, load("mutate"))
    assert report["mutant_timeout"] == 600 and report["mutant_memory_bytes"] == 4 * 2**30
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    mutants, totals_ = lines[:-1], lines[-1]["totals"]
    assert len(mutants) == totals_["mutants"] == report["totals"]["mutants"] > 0
    assert totals_ == report["totals"]
    schema = load("mutate")
    for m in mutants:
        assert m.pop("claim") == "gatmiry2024.lemma_a2"
        jsonschema.validate(m, {**schema["$defs"]["mutant"], "$defs": schema["$defs"]})
    assert code == 0


def test_a_mutant_past_its_timeout_survives_and_is_never_killed():
    """A claim whose check would take 30 s on any mutant (and none on the printed formula):
    with a 0.2 s limit each mutant is stopped, counted as a survivor, not killed."""
    import time

    from verify.claim import Claim, TierResult
    from verify.formulas import FormulaSymbol, NamedFormula
    from verify.mutate import mutate_claim

    def check(ctx):
        if ctx.formula_texts["b"] != "2*x":
            time.sleep(30)
        return TierResult("pass")

    x = FormulaSymbol("x", positive=True)
    claim = Claim("demo2026.lemma1", "a claim whose check is slow on mutants", "demo2026",
                  "b = 2x", (), (NamedFormula("b", "2*x", (x,)),), {"symbolic": check})
    seen = []
    start = time.perf_counter()
    report = mutate_claim(claim, {"tiers": ["symbolic"], "budget": "quick", "device": "cpu",
                                  "seed": 0}, mutant_timeout=0.2, on_outcome=seen.append)
    assert time.perf_counter() - start < 20
    (f,) = report.formulas
    assert f.outcomes and seen == f.outcomes
    for o in f.outcomes:
        assert o.verdict == "inconclusive" and o.status in ("survived", "equivalent")
        assert "not decided within the mutant timeout of 0.2 s" in o.reason


def test_a_mutant_past_its_memory_limit_survives_and_the_memory_is_given_back():
    """A check that grows without end on any mutant (an exact expansion that explodes): with a
    limit 200 MB above what the process holds, each mutant is stopped, counted as a survivor
    with the limit in its reason, never killed, and what it held is freed."""
    from verify.claim import Claim, TierResult
    from verify.formulas import FormulaSymbol, NamedFormula
    from verify.limits import resident_bytes
    from verify.mutate import mutate_claim

    assert resident_bytes() is not None  # Linux /proc, where the guard is enforced

    def check(ctx):
        held = []
        # at most 1 GB: a guard that does not stop it lets the check pass, and the test fails
        while ctx.formula_texts["b"] != "2*x" and len(held) < 100:
            held.append(bytearray(10**7))
        return TierResult("pass")

    x = FormulaSymbol("x", positive=True)
    claim = Claim("demo2026.lemma1", "a claim whose check explodes on mutants", "demo2026",
                  "b = 2x", (), (NamedFormula("b", "2*x", (x,)),), {"symbolic": check})
    limit = resident_bytes() + 200 * 2**20
    report = mutate_claim(claim, {"tiers": ["symbolic"], "budget": "quick", "device": "cpu",
                                  "seed": 0}, mutant_memory=limit)
    (f,) = report.formulas
    assert f.outcomes
    for o in f.outcomes:
        assert o.verdict == "inconclusive" and o.status in ("survived", "equivalent")
        assert "not decided within the mutant memory limit" in o.reason, o.reason
    assert resident_bytes() < limit


def test_mutant_memory_option():
    """--mutant-memory GB in bytes; by default half the machine shared by the jobs; a
    non-positive or non-finite value is a usage error."""
    from verify.errors import UsageError
    from verify.limits import total_memory
    from verify.mutate import mutant_memory

    assert mutant_memory(1.5) == 3 * 2**29
    if total_memory() is not None:
        assert mutant_memory(None, 2) == total_memory() // 4
    for bad in (0.0, -1.0, float("nan"), float("inf")):
        with pytest.raises(UsageError):
            mutant_memory(bad)


def test_a_survivor_the_exact_optimum_satisfies_is_true_and_one_it_violates_says_where():
    """gatmiry2024 Thm A.8's exact values are |a* - 1| and f(a*) of the derived loss: c with
    L^(1/(2L)) for d^(1/(2L)) is tighter than printed where L < d but still above |a* - 1|
    everywhere drawn (a true statement, status ``true``); c / 10^30 is below it."""
    import jsonschema

    from verify.mutants import judged_by_exact
    from verify.implication import exact_truth
    from verify.schema import load

    claim = find("gatmiry2024.thm_a8")
    domain = claim_domain(claim.formulas, {}, claim.exact)
    f = claim.formula("c")
    text = "8*L**(1/(2*L))*delta"
    eq = judged_by_exact(equivalence(f, text, domain=domain), f, text, 0, domain)
    assert eq.kind == "true" and "true where drawn" in eq.detail, eq.detail
    outcome = Outcome(Mutant("c", "swap", "d -> L", text), "verified", [], eq, "symbolic pass")
    assert outcome.status == "true" and "no sound check can refute" in outcome.explanation()
    schema = load("mutate")
    jsonschema.validate(outcome.as_dict(), {**schema["$defs"]["mutant"], "$defs": schema["$defs"]})
    kind, why = exact_truth("c", f.parse("8*d**(1/(2*L))*delta/10**30"), 0, domain)
    assert kind == "false" and "below the exact value" in why, why
    killed = Outcome(Mutant("c", "constant", "8 -> 8/10^30", "x"), "refuted", ["symbolic"],
                     eq, "symbolic: a bound fails")
    assert killed.status == "killed"   # an exact counterexample stands against sampled truth


def test_a_wider_hypothesis_is_judged_also_where_the_original_does_not_speak():
    """Lemma A.2 with n >= 4 k^2 d replaces d^2 by d: wider where d > 1; alpha_{n,d,k} at
    Sigma = I is the exact value, compared at points outside n >= 4 k^2 d^2 as well."""
    from verify.implication import exact_truth

    claim = find("gatmiry2024.lemma_a2")
    domain = claim_domain(claim.formulas, {}, claim.exact)
    kind, why = exact_truth("hypothesis", claim.formula("hypothesis").parse("n >= 4*d*k**2"), 0,
                            domain)
    assert kind == "true" and "where the original claim's hypotheses do not hold" in why, why
    kind, why = exact_truth("hypothesis", claim.formula("hypothesis").parse("n >= k"), 0, domain)
    assert kind == "false", why


def test_a_hypothesis_that_holds_at_a_handful_of_draws_is_not_called_narrower():
    """gatmiry2024 Lemma A.10 (corrected) with eps^(3L) for eps^(2L) in its loss threshold is
    wider (eps <= 1), but the mutant holds at only 11 of 3000 draws, all where the original
    holds too: that is too few to call it narrower (it was 'implied', and its kill a false
    alarm).  With n moved to 10^30 at a drawn point it holds where the original does not."""
    claim = find("gatmiry2024.lemma_a10")
    fixed = dict(claim.correction.formulas)
    f = claim.formula("hypothesis")
    text = f.text.replace("epsilon**(2*L)", "epsilon**(3*L)")
    assert text != f.text
    eq = equivalence(f, text, domain=claim_domain(claim.formulas, fixed))
    assert eq.kind == "none" and "not implied" in eq.detail and "moved" in eq.detail, eq.detail


def test_a_hypothesis_met_at_no_draw_is_not_vacuous_where_a_scalar_at_its_range_end_meets_it():
    """Thm A.12 (corrected) with -4L for 4L in its size condition, 4 d delta^(-4L-2) <= 1,
    holds only where delta is large (n small), and xi >= 2 (4 delta)^(2L) then asks for xi
    beyond the draws' 10^3: at none of 2837 draws, so it was 'vacuous', implied, and the flow
    check's refutation a false alarm.  With xi = 10^12 at a drawn point it holds where the
    original does not."""
    claim = find("gatmiry2024.thm_a12")
    fixed = dict(claim.correction.formulas)
    f = claim.formula("hypothesis")
    text = fixed["hypothesis"].replace("delta**(4*L - 2)", "delta**(-4*L - 2)")
    assert text != fixed["hypothesis"]
    eq = equivalence(f, text, base=fixed["hypothesis"],
                     domain=claim_domain(claim.formulas, fixed, claim.exact, claim.ranges))
    assert eq.kind == "none" and "not implied" in eq.detail and "'xi': '1.0e+12'" in eq.detail, \
        eq.detail


def test_a_hypothesis_that_drops_a_symbol_is_not_narrower_where_that_symbol_is_extreme():
    """Lemma A.9 with n for L(A, 0) in its loss condition no longer bounds the loss; at the 77
    draws where it held the drawn loss (<= 10^3) happened to meet the original too, so it was
    'implied' and its (right) refutation a false alarm.  Moving the dropped loss to the ends of
    its range finds a point where the mutant holds and the original does not."""
    claim = find("gatmiry2024.lemma_a9")
    f = claim.formula("hypothesis")
    text = "(epsilon > 2*delta) & (n <= -delta**(2*L)*(epsilon + 2)**(2*L) + epsilon**(2*L))"
    eq = equivalence(f, text, domain=claim_domain(claim.formulas, {}))
    assert eq.kind == "none" and "not implied" in eq.detail and "'loss'" in eq.detail, eq.detail
    # a narrower mutant that keeps every symbol is still implied
    eq = equivalence(f, f.text.replace("2*delta", "3*delta"),
                     domain=claim_domain(claim.formulas, {}))
    assert eq.kind == "implied", eq.detail


def test_a_bound_looser_only_where_a_scalar_is_drawn_small_is_not_implied():
    """Thm 3.3 (corrected) with n for xi in its radius c = 8 (1 + 4 d^(1/(2L))) xi^(1/(2L)) is
    looser wherever xi <= 10^3 is drawn (n is large under the hypothesis), so it was 'implied'
    and the farthest-start check's right refutation at xi = 10^40 > n = 10^12 a false alarm.
    With xi moved to the end of its range (10^30) it is tighter: not implied."""
    claim = find("gatmiry2024.thm3_3")
    fixed = dict(claim.correction.formulas)
    f = claim.formula("c")
    domain = claim_domain(claim.formulas, fixed, claim.exact, claim.ranges)
    eq = equivalence(f, "n**(1/(2*L))*(32*d**(1/(2*L)) + 8)", base=fixed.get("c"), domain=domain)
    assert eq.kind == "none" and "tighter" in eq.detail and "'xi': '1.0e+30'" in eq.detail, \
        eq.detail
    eq = equivalence(f, "xi**(1/(2*L))*(32*d**(1/(2*L)) + 9)", base=fixed.get("c"),
                     domain=domain)
    assert eq.kind == "implied" and "with a scalar at an end of its range" in eq.detail, eq.detail


def test_a_hypothesis_met_at_one_random_draw_in_a_thousand_is_judged_on_the_size_grid():
    """gatmiry2024 Thm 3.2 with n and d exchanged in its hypothesis (8 L n^2 / sqrt(d) <=
    4^-L) holds only where d >= 1024 L^2 n^4 16^(L-1): 2 of the 3000 random draws have d <= 10^6,
    where the exact optimum is computed, too few to judge it.  The size grid that follows adds
    the points (n, d, L) = (1..5, 10^3..10^6, 1..2), at all of which the bounds hold: a true
    statement (the sizes are tiny next to what the hypothesis asks)."""
    from verify.implication import GRID_POINTS, SIZE_LADDER, _size_grid, exact_truth

    claim = find("gatmiry2024.thm3_2")
    domain = claim_domain(claim.formulas, {}, claim.exact, claim.ranges)
    f = claim.formula("hypothesis")
    kind, why = exact_truth("hypothesis", f.parse("8*L*n**2/sqrt(d) <= 1/2**(2*L)"), 0, domain)
    assert kind == "true", why
    grid = list(_size_grid(["n", "d", "L"]))
    assert grid[0] == {"n": 1, "d": 1, "L": 1} and len(grid) == GRID_POINTS
    assert {"n": 2, "d": 10 ** 5, "L": 1} in grid and SIZE_LADDER[-1] == 10 ** 30
    assert len(list(_size_grid(["d"]))) == len(SIZE_LADDER)


def test_lemma_a5_exact_values_without_a_loop_count():
    """Lemma A.5 declares no L (delta = 4kd/sqrt(n)); its exact values (the sup of alpha^(j) over
    spectra) still judge a survivor: k lambda_1^k for delta lambda_1^k is true (delta <= 2 under
    n >= 4k^2d^2, the moment's excess far smaller), delta lambda_1^k / 10^6 is not."""
    from verify.implication import exact_truth

    claim = find("gatmiry2024.lemma_a5")
    domain = claim_domain(claim.formulas, dict(claim.correction.formulas), claim.exact)
    f = claim.formula("upper")
    assert exact_truth("upper", f.parse("k*lambda_1**k + lambda_j**k"), 0, domain)[0] == "true"
    kind, why = exact_truth("upper", f.parse("delta*lambda_1**k/10**6 + lambda_j**k"), 0, domain)
    assert kind == "false" and "below the exact value" in why


def test_a_stated_range_of_sizes_is_part_of_the_claims_domain():
    """Lemma 4.2 is stated for 1 <= k <= 2L (Claim.ranges): every point mutate draws for it has
    k <= 2L, and its exact values need no L; a range in a symbol the claim lacks is an error."""
    import numpy as np

    from verify.errors import UsageError
    from verify.implication import _domain_draws

    claim = find("gatmiry2024.lemma4_2")
    domain = claim_domain(claim.formulas, dict(claim.correction.formulas), claim.exact,
                          claim.ranges)
    names = [s.name for s in domain.symbols]
    points = list(_domain_draws(domain, np.random.default_rng(0)))
    assert len(points) > 100
    assert all(p[names.index("k")] <= 2 * p[names.index("L")] for p in points)
    assert "k <= 2*L" in domain.words
    assert claim.exact.values({"n": 10**6, "d": 2, "k": 7, "lambda_j": 1, "lambda_1": 1})
    with pytest.raises(UsageError, match="range"):
        claim_domain(claim.formulas, ranges=("k <= 2*m",))


def test_a_bound_tighter_only_in_a_corner_of_the_domain_is_not_implied():
    """gatmiry2024 Thm 4.5: (1 + 16 d^(1/(2L)) delta - zeta)^(3L) for ^(2L) is looser wherever
    the base is at least 1, tighter where delta is tiny (L = 3, n ~ 10^26); 60 domain points
    missed that corner and the check's correct refutation was reported as a false alarm."""
    claim = find("gatmiry2024.thm4_5")
    fixed = dict(claim.correction.formulas) if claim.correction else {}
    f = claim.formula("bound")
    text = ("w_norm2*xq_norm2*(16*d**(1/(2*L))*delta + 1)**2*(16*d**(1/(2*L))*delta - zeta + 1)"
            "**(3*L)")
    eq = equivalence(f, text, base=fixed.get("bound"), domain=claim_domain(claim.formulas, fixed))
    assert eq.kind == "none" and "tighter (smaller)" in eq.detail, eq.detail


def test_summation_indices_keep_their_scope_and_their_names_do_not_matter():
    """gatmiry2024 Cor. A.4's u-term is a double sum over i, j: a mutant that uses i outside
    its sum (i -> d in one occurrence, L <-> i) is ill-scoped, hence invalid; swapping the names
    i and j everywhere is the same formula; a limit depending on the outer index is expanded."""
    from verify.formulas import sum_terms

    f = find("gatmiry2024.cor_a4").formula("second")
    mutants, invalid = generate(f)
    scoped = [x for x in invalid if "ill-scoped" in x.error]
    assert {x.change for x in scoped} >= {"L <-> i everywhere", "i -> d (one of 2 occurrences)"}
    assert all("summation index" in x.error for x in scoped)
    (swap,) = [m for m in mutants if m.change == "i <-> j everywhere"]
    eq = equivalence(f, swap.text)
    assert eq.kind == "simplification" and "names of its summation indices" in eq.detail
    assert equivalence(f, f.text.replace("(i, 0, L-1)", "(i, 0, j)")).kind == "none"
    # a sum is evaluated term by term, so a transpose of the symmetric Sigma is equivalent
    transposed = f.text.replace("u.T*Sigma*A*", "u.T*Sigma.T*A*", 1)
    assert equivalence(f, transposed).kind == "assumptions"
    i, j = (__import__("sympy").Symbol(s) for s in "ij")
    triangle = sum_terms(i + 10 * j, [(i, 0, j), (j, 0, 2)])   # inner limit depends on j
    assert sorted(triangle) == [0, 10, 11, 20, 21, 22]


def test_pairs_of_exact_values_judge_true_by_the_enclosure_and_false_by_an_attained_value():
    """Lemma A.7's exact values are (attained, enclosure) pairs: an upper bound with a tenth of
    the printed slack still clears the enclosure (true); (1 - lambda_j)^k alone is below a value
    beta^(j) attains (false)."""
    from verify.implication import exact_truth

    claim = find("gatmiry2024.lemma_a7")
    domain = claim_domain(claim.formulas, dict(claim.correction.formulas), claim.exact)
    f = claim.formula("upper")
    assert exact_truth("upper", f.parse("(1 - lambda_j)**k + delta**k*(lambda_1 + 1)**k/10"), 0,
                       domain)[0] == "true"
    kind, why = exact_truth("upper", f.parse("(1 - lambda_j)**k"), 0, domain)
    assert kind == "false" and "below the exact value" in why, why


def test_thm2_tail_is_judged_by_the_chi_square_quantile():
    """yang2024 Thm 2 has no hypotheses, so implication is judged over every positive value as
    before; its exact values (tau ||lambda||^2 times the chi-square quantile (68) bounds) still
    give it a domain for ``exact_truth``.  log(1/delta)^{3/2} for log(1/delta)^{1/2} in (68) is
    tighter where delta > 1/e and still above the quantile (a true statement, which survived
    the checks as a non-equivalent mutant); dropping the sqrt term is below it somewhere; the
    quantile itself agrees with scipy's."""
    from scipy.stats import chi2

    from proofs_checks.yang2024.training import chi_square_quantile
    from verify.mutants import judged_by_exact
    from verify.implication import exact_truth

    claim = find("yang2024.thm2")
    domain = claim_domain(claim.formulas, {}, claim.exact)
    assert domain is not None and not domain.restricts
    f = claim.formula("tail")
    text = f.text.replace("sqrt(N*log(1/delta))", "sqrt(N)*log(1/delta)**(3/2)")
    assert text != f.text
    eq = judged_by_exact(equivalence(f, text), f, text, 0, domain)
    assert eq.kind == "true" and "true where drawn" in eq.detail, eq.detail
    kind, why = exact_truth("tail", f.parse("N*tau*lam_sq + 2*lam_sq*tau*log(1/delta)"), 0,
                            domain)
    assert kind == "false" and "below the exact value" in why, why
    assert float(chi_square_quantile(5, 0.01)) == pytest.approx(chi2.isf(0.01, 5), rel=1e-12)


@pytest.mark.parametrize("text,implied", [
    ("(s_min >= d) & (s_max <= 2 - zeta)", True),      # d >= 1 > zeta
    ("(s_min >= zeta) & (s_max <= 2 - L)", True),      # L >= 1 > zeta
    ("(s_min >= zeta/2) & (s_max <= 2 - zeta)", False),  # a wider window
])
def test_a_rarely_met_narrower_hypothesis_is_implied_by_a_proof(text, implied):
    """gatmiry2024 Thm A.13 with d or L for zeta in its window holds only where d = 1 or L = 1
    and Sigma^out's spectrum sits in [1, 2 - zeta]: about 10 of 3000 draws, too few for the
    sampling to call it narrower, so the mutant survived.  Each condition of the original
    follows from one of the mutant's (s_min >= d gives s_min >= zeta: the gap d - zeta >= 0 on
    the domain), which is a proof; a wider window still meets its counterexample."""
    claim = find("gatmiry2024.thm_a13")
    fixed = dict(claim.correction.formulas) if claim.correction else {}
    eq = equivalence(claim.formula("condition"), text,
                     domain=claim_domain(claim.formulas, fixed, claim.exact))
    if implied:
        assert eq.kind == "implied" and "the mutant hypothesis implies the original" in eq.detail
        assert "- zeta >= 0" in eq.detail, eq.detail
    else:
        assert eq.kind == "none" and "where the original does not" in eq.detail, eq.detail


def test_the_narrower_proof_needs_every_condition_and_a_strict_gap_for_a_strict_one():
    """The conjunct-wise proof: every condition of the original must follow from one of the
    mutant's; a strict original condition needs a strict mutant one or a positive gap."""
    import sympy

    from verify.formulas import FormulaSymbol, NamedFormula
    from verify.implication_proofs import _narrower_proof

    f = NamedFormula("h", "(x > y) & (x <= 3)", (FormulaSymbol("x"), FormulaSymbol("y"),
                                                  FormulaSymbol("d")), weaker="narrower")
    x, y, d = (f.locals()[k] for k in "xyd")
    assert _narrower_proof(f, f.parse(), (x > y + 1) & (x <= 2))
    assert _narrower_proof(f, f.parse(), (x >= y + d) & (x <= 3))       # d >= 1: a positive gap
    assert not _narrower_proof(f, f.parse(), (x >= y) & (x <= 2))        # x = y: not x > y
    assert not _narrower_proof(f, f.parse(), x > y + 1)                  # x <= 3 not implied
    assert not _narrower_proof(f, f.parse(), (x > y / 2) & (x <= 2))
    assert not _narrower_proof(f, f.parse(), sympy.Or(x > y + 1, x <= 2))


def test_a_survivor_says_how_near_the_checks_came_to_refuting_it():
    """A bound b(x) = 2x on q(x) = x/2: its mutant b = x holds too (q uses half of it), so it
    survives; its reason and its JSON give the comparison nearest to failing, 0.5 of the bound,
    with the check, the tier and the instance."""
    from verify.claim import Claim
    from verify.evidence import Closest, Finding, combine
    from verify.formulas import FormulaSymbol, NamedFormula
    from verify.mutate import mutate_claim

    def check(ctx):
        b = ctx.formulas["b"]
        near, ok = Closest("q(x) / b(x)"), True
        for x in (1, 2, 4):
            bound = b.subs({s: x for s in b.free_symbols})
            near.see_le(sympy.Rational(x, 2), bound, {"x": x})
            ok &= bool(sympy.Rational(x, 2) <= bound)
        return combine([Finding("bound", ok, {}, None if ok else {"x": "some"}, "", near.margin)])

    x = FormulaSymbol("x", positive=True)
    claim = Claim("demo2026.lemma1", "q(x) <= b(x)", "demo2026", "x/2 <= 2x", (),
                  (NamedFormula("b", "2*x", (x,), weaker="larger"),), {"symbolic": check})
    report = mutate_claim(claim, {"tiers": ["symbolic"], "budget": "quick", "device": "cpu",
                                  "seed": 0})
    (f,) = report.formulas
    (tighter,) = [o for o in f.outcomes if o.mutant.text == "x"]
    assert tighter.status == "survived"
    assert ("closest approach: 0.5 of the bound (q(x) / b(x); symbolic bound at x=1)"
            in tighter.explanation())
    assert tighter.as_dict()["closest_approach"] == {
        "used": 0.5, "measure": "q(x) / b(x)", "at": {"x": 1}, "check": "bound",
        "tier": "symbolic"}
    killed = [o for o in f.outcomes if o.status == "killed"]
    assert killed and all("closest_approach" not in o.as_dict() for o in killed)
    for o in f.outcomes:
        _validate_mutant(o)


def _validate_mutant(outcome) -> None:
    """One mutant's JSON against the shipped schema's mutant definition."""
    import jsonschema

    from verify.schema import load
    schema = load("mutate")
    jsonschema.validate(outcome.as_dict(), {**schema["$defs"]["mutant"], "$defs": schema["$defs"]})


def test_a_survivor_whose_checks_compared_nothing_is_labelled_untested():
    """A hypothesis h on the draws (x, c) = (2, 1), (4, 1), (8, 1) of a bound x/2 <= 2x: its
    mutant c >= 2x admits none of them, so the check compares no bound and passes vacuously; it
    is labelled untested (the original compared three), while x >= 3c, which admits two, is not."""
    from verify.claim import Claim
    from verify.evidence import Closest, Finding, combine
    from verify.formulas import FormulaSymbol, NamedFormula
    from verify.mutate import mutate_claim

    def check(ctx):
        h = ctx.formulas["h"]
        near = Closest("q(x) / b(x)")
        for x in (2, 4, 8):
            if bool(h.subs({s: {"x": x, "c": 1}[s.name] for s in h.free_symbols})):
                near.see_le(sympy.Rational(x, 2), 2 * x, {"x": x})
        return combine([Finding("bound", True, {}, None, "", near.margin)])

    x, c = FormulaSymbol("x", positive=True), FormulaSymbol("c", positive=True)
    claim = Claim("demo2026.lemma2", "q(x) <= b(x) where h", "demo2026", "x/2 <= 2x if x >= 2c", (),
                  (NamedFormula("h", "x >= 2*c", (x, c)),), {"symbolic": check})
    report = mutate_claim(claim, {"tiers": ["symbolic"], "budget": "quick", "device": "cpu",
                                  "seed": 0})
    by_text = {o.mutant.text: o for o in report.formulas[0].outcomes}
    empty, narrower = by_text["c >= 2*x"], by_text["x >= 3*c"]
    assert empty.status == narrower.status == "survived"
    assert empty.as_dict()["untested"] is True and "closest_approach" not in empty.as_dict()
    assert "untested: its checks compared no bound" in empty.explanation()
    assert "untested" not in narrower.as_dict() and "closest approach: 0.25" in narrower.explanation()
    assert report.formulas[0].counts()["survived_untested"] == 1
    _validate_mutant(empty)
