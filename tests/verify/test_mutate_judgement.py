"""Mutation testing, the judgement of a surviving mutant: implied (a looser bound, a narrower
hypothesis) by the original or by its proof, equivalent on the claim's domain, or true or false
by the claim's exact values; the draws over the domain these judgements sample."""
import json

import pytest
import sympy

from verify.cli import main
from verify.formulas import FormulaSymbol, NamedFormula
from verify.mutants import Equivalence, Mutant, claim_domain, equivalence, generate
from verify.mutate import Outcome, totals
from verify.registry import find


def formula(claim_id, name):
    return find(claim_id).formula(name)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


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
