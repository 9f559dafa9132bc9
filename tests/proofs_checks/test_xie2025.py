"""xie2025: each claim as printed comes out as computed; deliberately wrong formulas are refuted."""
import json

import numpy as np
import pytest
import sympy

from verify.cli import main
from verify.registry import by_paper, find
from verify.runner import check_claim

QUICK = {"budget": "quick", "seed": 0}


def verdict(claim_id, tiers=("symbolic",), **overrides):
    return check_claim(find(claim_id), tiers=tiers, overrides=overrides, **QUICK)


# ---------------------------------------------------------------------- verdicts as computed
AS_COMPUTED = {
    "xie2025.thm1": "verified", "xie2025.thm2": "refuted", "xie2025.lemma1": "verified",
    "xie2025.eq8": "corrected", "xie2025.eq9": "verified", "xie2025.thm4": "verified",
    "xie2025.lemma2": "verified", "xie2025.lemma3": "corrected", "xie2025.fig2": "corrected",
    "xie2025.fig3": "verified", "xie2025.fig4": "verified", "xie2025.fig5": "verified",
}


# the ledger's claims (coverage.toml): their verdicts and wrong formulas are tested in
# test_xie2025_<module>.py beside them
LEDGER = {"xie2025.eq_b3_case_sum", "xie2025.eq_b3_cross_case", "xie2025.eq6_concat", "xie2025.thm1_counts", "xie2025.eq18", "xie2025.eq25",
          "xie2025.lemma1_saddle", "xie2025.eq8_b1", "xie2025.thm4_risk", "xie2025.thm4_moments"}


def test_every_claim_is_listed():
    assert sorted(c.id for c in by_paper("xie2025")) == sorted(set(AS_COMPUTED) | LEDGER)


@pytest.mark.parametrize("claim_id", sorted(AS_COMPUTED))
def test_symbolic_verdicts(claim_id):
    v = verdict(claim_id)
    assert v.verdict == AS_COMPUTED[claim_id], v.as_dict()


def test_eq8_counterexample_and_correction():
    v = verdict("xie2025.eq8", tiers=("symbolic", "numeric"))
    ce = v.counterexample
    assert ce["forward_pass"] != ce["paper_eq8"] and ce["sizes"] == {"d": 2, "C": 3}
    assert v.correction_tiers["symbolic"].status == "pass"
    assert v.correction_tiers["numeric"].status == "pass"


def test_thm2_fails_in_the_limit_and_eq23():
    v = verdict("xie2025.thm2")
    ev = v.tiers["symbolic"].evidence
    assert ev["gradient_vanishes_as_C_grows"]["ok"] is False
    assert ev["gradient_vanishes_as_C_grows"]["gradient_norm2_limit"] == "0"
    assert ev["eq21_weighted_gram"]["ok"] is True and ev["eq22_mean_gram"]["ok"] is True
    assert ev["eq23_limit_of_EGG"]["ok"] is False and ev["eq27_finite_C"]["ok"] is False
    assert ev["finite_C_stationary_point"]["stationary"] is True
    assert v.counterexample["check"] == "gradient_vanishes_as_C_grows"


def test_thm4_reports_the_leading_behaviour():
    ev = verdict("xie2025.thm4").tiers["symbolic"].evidence
    g = ev["gradient_limit_is_zero"]
    assert g["gradient_norm2"] == "4*(d + 1)**2*(d**2 + d + s**2 + 2*s)/C**2"
    assert g["risk_at_point"] == "d*(d + 1)/C"
    assert ev["residual_is_order_1_over_C"]["ok"] is True


def test_fig2_saturates_at_d_heads():
    """Exact in C at the paper's d = 10 too: 10 heads reach R*, 9 cannot (the figure names 11);
    the counterexample is the one at the paper's size."""
    v = verdict("xie2025.fig2")
    assert v.counterexample["d"] == 10
    assert v.counterexample["derived_H_risk"] == 10 and v.counterexample["named_H_risk"] == 11
    dims = v.tiers["symbolic"].evidence["saturation_point"]["dims"]
    assert [r["d"] for r in dims][-1] == 10 and all(r["derived_H_risk"] == r["d"] for r in dims)
    v = verdict("xie2025.fig2", H_risk="d")
    assert v.verdict == "verified"


def test_figures_at_smaller_sizes_are_stand_ins():
    """The numeric and train tiers of Figs. 2-5 at --budget quick run d = 3, C = 6 for the
    paper's d = 10, C = 10: their findings are stand-ins; the symbolic tier, exact at d = 10, is
    what verifies."""
    from proofs_checks.xie2025.setting import paper_size_stand_in

    v = verdict("xie2025.fig3", tiers=("symbolic", "numeric"))
    assert v.verdict == "verified"
    assert v.tiers["numeric"].support == "stand-in" and v.tiers["symbolic"].support != "stand-in"
    assert [r["d"] for r in v.tiers["symbolic"].evidence["gap_against_norm"]["dims"]][-1] == 10
    assert paper_size_stand_in(type("I", (), {"d": 10, "C": 10})()) == ""


def test_fig3_gap_is_exactly_linear():
    ev = verdict("xie2025.fig3").tiers["symbolic"].evidence
    rows = {r["d"]: r for r in ev["gap_against_norm"]["dims"]}
    assert rows[2]["derived_gap"] == "s/(C + 1)"
    assert rows[3]["derived_gap"] == "2*s/(3*C + 2)"


# ---------------------------------------------------------------------- mutants are refuted
_UMU = "(u_x + u*w_star).T*(u_x + u*w_star) + d*u**2*Identity(1)"
_F8 = "y_q - eta/C*(w_star.T*X.T - y.T)*X*x_q"
MUTANTS = {
    "thm1 one head too few": ("xie2025.thm1", {"H_sat": "d"}),
    "thm1 one head too many": ("xie2025.thm1", {"H_sat": "d + 2"}),
    "lemma1 changed constant in A.4": ("xie2025.lemma1", {"uMu": _UMU.replace("d*u", "(d+1)*u")}),
    "eq8 flipped sign": ("xie2025.eq8", {"W_P": "-eta*Identity(d+1)",
                                         "f8": _F8.replace("y_q -", "y_q +")}),
    "eq8 dropped transpose": ("xie2025.eq8", {"W_P": "-eta*Identity(d+1)",
                                              "f8": _F8.replace("X*x_q", "X.T.T*x_q*0")}),
    "eq8 value weights with a ones block (App. B.1's V)": ("xie2025.eq8", {
        "W_P": "-eta*Identity(d+1)",
        "W_V": "BlockMatrix([[OneMatrix(d, d), ZeroMatrix(d, 1)], [w_star.T, -Identity(1)]])"}),
    "eq8 key weights with a ones row (App. B.1's K)": ("xie2025.eq8", {
        "W_P": "-eta*Identity(d+1)",
        "W_K": "BlockMatrix([[Identity(d), ZeroMatrix(d, 1)], "
               "[OneMatrix(1, d), ZeroMatrix(1, 1)]])"}),
    "eq9 flipped sign": ("xie2025.eq9", {"f9": "(w_star + eta/C*X.T*(X*w_star - y)).T*x_q"}),
    "eq9 loss without 1/2": ("xie2025.eq9", {"L_ls": "(X*w - y).T*(X*w - y)/C"}),
    "thm4 changed constant": ("xie2025.thm4", {"b_y": "2"}),
    "thm4 wrong guess": ("xie2025.thm4", {"v": "2*w_star"}),
    "thm4 a_yx of ones (exact gradient at a small instance)": ("xie2025.thm4", {
        "a_yx": "OneMatrix(d, 1)"}),
    "thm4 B.3 moment": ("xie2025.thm4", {
        "EWwwW": "C*(C + 2)*w*w.T + C*trace(w*w.T)*Identity(d)"}),
    "lemma3 query weights without W_3": ("xie2025.lemma3", {
        "WK_new": "W_K", "WV_new": "W_V", "WQ_new": "W_Q"}),
    "lemma3 transposed inverse (seen with a non-symmetric W_1)": ("xie2025.lemma3", {
        "WK_new": "W_K", "WV_new": "W_V", "WP_new": "Inverse(Transpose(W_1))*W_P"}),
    "lemma3 W_1 corner doubled (block-matrix mutant)": ("xie2025.lemma3", {
        "WK_new": "W_K", "WV_new": "W_V",
        "W_1": "BlockMatrix([[Identity(d), w], [Transpose(w), 2*c*Identity(1)]])"}),
    "lemma3 W_3 with a ones corner (block-matrix mutant)": ("xie2025.lemma3", {
        "WK_new": "W_K", "WV_new": "W_V",
        "W_3": "BlockMatrix([[Identity(d), ZeroMatrix(d, 1)], [Transpose(w), OneMatrix(1, 1)]])"}),
    "fig2 one head too few": ("xie2025.fig2", {"H_risk": "d - 1"}),
    "fig3 quadratic gap": ("xie2025.fig3", {"gap": "kappa*s**2"}),
    "fig3 offset gap": ("xie2025.fig3", {"gap": "kappa*s + 1"}),
    "fig4 quadratic in the guess norm": ("xie2025.fig4", {"gap_guess": "k_g*g2**2"}),
    "fig4 linear in the bias": ("xie2025.fig4", {"gap_bias": "k_b*beta"}),
    "fig3 shrinking gap (negative fitted slope)": ("xie2025.fig3", {"gap": "-kappa*s"}),
    "fig4 shrinking gap in the guess": ("xie2025.fig4", {"gap_guess": "-k_g*g2"}),
    "fig4 shrinking gap in the bias": ("xie2025.fig4", {"gap_bias": "-k_b*beta**2"}),
    "fig5 GD started at zero": ("xie2025.fig5", {"w1": "eta/C*X.T*y"}),
    "fig5 ascent step (no positive best step)": ("xie2025.fig5", {
        "w1": "w_star + eta/C*X.T*(X*w_star - y)"}),
    "fig5 step size dropped (risk constant in eta)": ("xie2025.fig5", {
        "w1": "w_star - d/C*X.T*(X*w_star - y)"}),
    "thm2 eq22 changed constant": ("xie2025.thm2", {"M_yy": "w_star.T*w_star + (d+1)*Identity(1)"}),
}


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_mutants_are_refuted(name):
    claim_id, overrides = MUTANTS[name]
    v = verdict(claim_id, **overrides)
    assert v.verdict == "refuted", (name, v.as_dict())
    assert v.counterexample and v.counterexample["tier"] == "symbolic"


def test_thm4_general_path_agrees_with_the_structured_one_at_the_printed_point():
    from proofs_checks.xie2025 import derive
    from proofs_checks.xie2025.stationary_claims import _gradient_limit_at_instance

    F = {f.name: f.parse() for f in find("xie2025.thm4").formulas}
    f = _gradient_limit_at_instance(F, derive.single_head_risk("linear"))
    assert f.ok is True and f.evidence["gradient"]["b_y"] == "12/C"


def test_eq8_exact_path_agrees_with_the_kernel_path():
    from proofs_checks.xie2025.gd_claims import _eq8_exact

    c = find("xie2025.eq8")
    F = {f.name: f.parse() for f in c.formulas}
    assert _eq8_exact(F)[0] is False
    F["W_P"] = c.formula("W_P").parse("-eta*Identity(d+1)")
    assert _eq8_exact(F)[0] is True


def test_fig5_mutant_without_a_best_step_is_refuted_by_the_numeric_tier():
    v = verdict("xie2025.fig5", tiers=("numeric",), w1="w_star - d/C*X.T*(X*w_star - y)")
    assert v.verdict == "refuted"
    assert "no unique stationary step size" in v.tiers["numeric"].reason


def test_convexity_witnesses_are_not_named_formulas():
    """Lemmas 1 and 2 say nothing about eq. (7) or the App. B.3 point: the witnesses are fixed."""
    assert [f.name for f in find("xie2025.lemma1").formulas] == ["uMu"]
    assert find("xie2025.lemma2").formulas == ()


def test_thm2_mutated_eq22_fails_its_own_finding():
    v = verdict("xie2025.thm2", M_yy="w_star.T*w_star + (d+1)*Identity(1)")
    assert v.tiers["symbolic"].evidence["eq22_mean_gram"]["ok"] is False


def test_correct_variants_pass():
    assert verdict("xie2025.eq8", W_P="-eta*Identity(d+1)").verdict == "verified"
    assert verdict("xie2025.lemma3", WK_new="W_K", WV_new="W_V").verdict == "verified"


# ---------------------------------------------------------------------- numeric tier, CLI
def test_numeric_tiers_agree_with_monte_carlo():
    for cid in ("xie2025.thm1", "xie2025.lemma1", "xie2025.fig4", "xie2025.fig5"):
        v = check_claim(find(cid), tiers=("numeric",), **QUICK)
        assert v.tiers["numeric"].status == "pass", (cid, v.as_dict())
        if cid.startswith("xie2025.fig"):  # d = 3, C = 6 at quick: a stand-in for d = C = 10
            assert v.verdict == "inconclusive" and v.tiers["numeric"].support == "stand-in"
        else:
            assert v.verdict == "verified", (cid, v.as_dict())


def test_a_derived_risk_off_the_monte_carlo_is_the_engine_s_not_a_counterexample():
    """The Monte Carlo comparisons of risks the engine derived (``mc_finding``) are
    self-checks: an exact risk outside the interval makes the tier undecided, never refuted."""
    from proofs_checks.xie2025.common import mc_compare, mc_finding
    from proofs_checks.xie2025.setting import Instance

    inst = Instance(2, 4, 1)
    P, Q = np.zeros((1, 3, 3)), np.zeros((1, 3, 3))
    ok, rows = mc_compare([("no attention", P, Q, 100.0, inst, 3, None)], 4000)
    found = mc_finding("derived_risk_vs_monte_carlo", ok, rows, inst, 0, "off the interval")
    assert ok is False and found.ok is None and found.counterexample is None
    assert "no counterexample to the statement" in found.reason


def _cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_rejects_a_covariance_and_impossible_sizes(capsys):
    code, _, err = _cli(capsys, "check", "xie2025.eq8", "--sigma", "diag:1,2", "--budget",
                        "quick")
    assert code == 2 and "--sigma must be identity" in err
    code, _, err = _cli(capsys, "check", "xie2025.eq8", "--size", "q=3", "--budget", "quick")
    assert code == 2 and "this setting has sizes" in err
    code, _, err = _cli(capsys, "check", "xie2025.eq8", "--size", "d=40", "--budget", "quick")
    assert code == 2 and "d <= 12" in err


def test_cli_json_of_a_corrected_claim(capsys):
    code, out, _ = _cli(capsys, "check", "xie2025.eq8", "--budget", "quick", "--json")
    out = json.loads(out)
    assert code == 0 and out[0]["verdict"] == "corrected"
    assert out[0]["counterexample"]["tier"] == "symbolic"


@pytest.mark.slow
def test_every_tier_quick_budget():
    """The main claims at every tier (the ledger's are checked in their modules' tests)."""
    claims = [c for c in by_paper("xie2025") if c.id not in LEDGER]
    assert {c.id for c in claims} == set(AS_COMPUTED)
    for c in claims:
        v = check_claim(c, **QUICK)
        assert v.verdict == AS_COMPUTED[c.id], (c.id, v.as_dict())


@pytest.mark.slow
def test_sizes_change_the_instance():
    v = check_claim(find("xie2025.thm4"), tiers=("numeric",), sizes={"d": 2, "C": 8},
                    **QUICK)
    assert v.tiers["numeric"].evidence["instance"]["d"] == 2
    assert sympy.Integer(v.tiers["numeric"].evidence["instance"]["C"]) == 8


@pytest.mark.slow
def test_thm4_training_that_misses_the_point_decides_nothing():
    """At --budget default L-BFGS stops ~0.5 away from App. B.3's point: a stationary point need
    not attract training, so the train tier is undecided, not a refutation (it was `refuted`)."""
    v = check_claim(find("xie2025.thm4"), tiers=("train",), budget="default", seed=0)
    assert v.tiers["train"].status in ("skipped", "pass") and v.verdict != "refuted"


# ---------------------------------------------------------------- diverged training decides nothing
def test_a_trained_risk_that_is_not_finite_is_missed_not_reached(monkeypatch):
    """Every restart diverged (best risk nan): the gap to R* is nan, which is neither "below R*"
    nor "reached R*"; the training findings are undecided, never a pass."""
    import math

    import numpy as np

    from proofs_checks.xie2025 import gap_claims, head_claims
    from proofs_checks.xie2025.setting import Instance
    from proofs_checks.xie2025.training import ExactRuns

    inst = Instance(2, 4, 1)
    rows = [{"w_entry": 1, "trained_risk": math.nan, "R_star": 1.0,
             "relative_gap_to_R*": math.nan}]
    f = gap_claims._trained_vs_optimum(rows, "w_entry", 1e-6, 2.0, inst, "w_entry in {}")
    assert f.ok is None and "did not reach" in f.reason

    nan_run = ExactRuns(3, math.nan, np.zeros(1), np.zeros(1), [], diverged=3)
    monkeypatch.setattr(head_claims, "head_sweep", lambda *a, **k: {2: nan_run, 3: nan_run})
    ctx = type("Ctx", (), {"budget": type("B", (), {"name": "quick", "restarts": 3})(),
                           "device": "cpu", "seed_for": lambda self, *a: 0})()
    below, missed, reached, _ = head_claims._sweep_finding(ctx, inst, 1.0, [3], [2])
    assert below is None and reached == [] and sorted(missed) == [2, 3]


def test_fig5_training_whose_risks_are_nan_is_undecided(monkeypatch):
    """The exact-risk training passed when its risk was NaN (gap > tol is False) and so did the
    sampled-prompt training (risk < R_GD (1 - tol) is False): both are undecided."""
    import math
    from types import SimpleNamespace

    import numpy as np
    import torch

    from proofs_checks.xie2025 import gap_claims
    from proofs_checks.xie2025.setting import Instance
    from verify.claim import BUDGETS, Context

    inst = Instance(2, 4, 1)
    z = torch.zeros(1, 3, 3, dtype=torch.float64)
    model = SimpleNamespace(lsa=SimpleNamespace(products=lambda: (z, z)),
                            w=torch.zeros(2, dtype=torch.float64))
    monkeypatch.setattr(gap_claims, "_gd_at_instance", lambda ctx: (inst, None, 0.5, 1.0))
    monkeypatch.setattr(gap_claims, "train_yq_exact", lambda *a: {
        "risk": math.nan, "v": np.zeros(2), "status": "diverged", "curve": [1.0]})
    monkeypatch.setattr(gap_claims, "train_yq_sampled", lambda *a: (model, {"curve": []}))
    monkeypatch.setattr(gap_claims, "_c2_metrics", lambda *a: {})
    monkeypatch.setattr(gap_claims, "heads_risk", lambda *a: math.nan)
    monkeypatch.setattr(gap_claims, "figure_entry", lambda f: {})
    ev = gap_claims.fig5_train(Context("xie2025.fig5", {}, {}, BUDGETS["quick"], device="cpu")).evidence
    assert ev["exact_risk_training"]["ok"] is None
    assert ev["sampled_prompt_training"]["ok"] is None


def test_head_counts_trained_at_once_follow_each_count_trained_alone():
    """train_exact_heads pads every head count to the largest with masked zero heads: each count
    starts where train_exact starts it, its padding stays at zero, and it ends where training
    that count alone ends (up to rounding)."""
    from proofs_checks.xie2025.setting import Instance
    from proofs_checks.xie2025.training import train_exact, train_exact_heads

    inst = Instance(2, 4, 1)
    together = train_exact_heads(inst, (1, 2, 3), 2, 40, (11, 12, 13), "cpu")
    for H, seed in zip((1, 2, 3), (11, 12, 13)):
        alone = train_exact(inst, H, 2, 40, seed, "cpu")
        both = together[H]
        assert both.best_P.shape == alone.best_P.shape == (H, 3, 3)
        assert [r["curve"][0] for r in both.runs] == pytest.approx(
            [r["curve"][0] for r in alone.runs], rel=1e-12)
        assert both.best == pytest.approx(alone.best, rel=1e-7)
        assert [r["steps"] for r in both.runs] == pytest.approx([r["steps"] for r in alone.runs], abs=3)
