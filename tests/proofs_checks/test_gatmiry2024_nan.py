"""gatmiry2024: a float that is not a number decides nothing.  The float searches kept their
largest error with ``max`` (which drops a NaN), flagged a failure with ``x > tol`` (False at a
NaN), or were undecided only when *every* instance was (a NaN at one instance passed on the
others); each must leave the finding undecided (ok None)."""
import dataclasses
import math
from types import SimpleNamespace

import numpy as np

from proofs_checks.gatmiry2024 import (dominance, figures, flow_proof, gaussian_steps, gd_prose,
                                       layer_steps, loss, ood)
from verify.claim import BUDGETS, Context
from verify.evidence import Finding
from verify.registry import find

NAN = math.nan


def _ctx(cid, corrected=False):
    """The claim's context at the printed formulas, or at its correction's (where the printed
    statement fails, a NaN must be seen to undo a pass)."""
    c = find(cid)
    fs = [dataclasses.replace(f, text=c.correction.formulas.get(f.name, f.text)) if corrected
          else f for f in c.formulas]
    return Context(cid, {f.name: f.parse() for f in fs}, {f.name: f.text for f in fs},
                   BUDGETS["quick"], device="cpu", seed=0)


def _nan_once(real):
    """``real`` with its first result replaced by NaN (of the same shape)."""
    calls = []

    def once(*a, **k):
        out = real(*a, **k)
        calls.append(1)
        if len(calls) > 1:
            return out
        try:
            return out * NAN
        except TypeError:
            return NAN
    return once


def test_float_instances_with_one_nan_are_undecided():
    a = np.ones((2, 2))
    pairs = [({"i": 0}, a, a), ({"i": 1}, a, a * NAN)]
    assert gd_prose._float_finding("x", pairs, "w", "eq").ok is None
    samples = np.random.default_rng(0).standard_normal((50, 2))
    mc = [({"i": 0}, samples, np.zeros(2)), ({"i": 1}, samples, np.full(2, NAN))]
    assert gaussian_steps._mc_finding(mc).ok is None


def test_label_update_with_one_nan_instance_is_undecided(monkeypatch):
    monkeypatch.setattr(layer_steps, "torch_value", _nan_once(layer_steps.torch_value))
    ev = layer_steps._update_numeric(_ctx("gatmiry2024.thm_a1_label_update", corrected=True)).evidence
    assert ev["gaussian_instances"]["ok"] is None


def test_flow_rate_with_one_nan_point_is_undecided(monkeypatch):
    monkeypatch.setattr(flow_proof, "value", _nan_once(flow_proof.value))
    ev = flow_proof._rate_numeric(_ctx("gatmiry2024.thm3_4_remark", corrected=True)).evidence
    assert ev["flow_direction"]["ok"] is None


def test_ood_random_instances_with_one_nan_are_undecided(monkeypatch):
    real = ood._numeric_trial
    seen = []

    def nan_first(*a, **k):
        found = real(*a, **k)
        if found is not None and not seen:
            seen.append(1)
            row, err2, bound = found
            return row, NAN, bound
        return found
    monkeypatch.setattr(ood, "_numeric_trial", nan_first)
    ev = ood._ood_numeric(_ctx("gatmiry2024.thm4_5")).evidence
    assert seen and ev["random_instances"]["ok"] is None


def test_thm_a1_forward_pass_that_is_nan_is_undecided(monkeypatch):
    real = loss.compile_formula

    monkeypatch.setattr(loss, "compile_formula", lambda expr, sizes: _Nan(real(expr, sizes)))
    ev = loss.thm_a1_numeric(_ctx("gatmiry2024.thm_a1")).evidence
    assert ev["forward_pass_vs_recursions"]["ok"] is None


class _Nan:
    def __init__(self, f):
        self.f, self.arg_names = f, f.arg_names

    def __call__(self, **k):
        return np.asarray(self.f(**k), dtype=float) * NAN


def test_gradient_at_scalar_points_that_is_nan_is_undecided(monkeypatch):
    real = dominance.li.derived_loss

    class NanLoss:
        def __init__(self, C):
            self.C = C

        def evaluate(self, env, sizes):
            return self.C.evaluate(env, sizes) * NAN
    monkeypatch.setattr(dominance.li, "derived_loss", lambda *a, **k: NanLoss(real(*a, **k)))
    monkeypatch.setattr(dominance.li, "loops", lambda ctx: (1,))
    assert dominance._gradient_cross_check(_ctx("gatmiry2024.thm3_4")).ok is None


def test_fig1_with_a_named_limit_that_is_nan_is_undecided(monkeypatch):
    """'abs(dist - target) > 1e-3' is False at a NaN target: every converged run passed."""
    def trained(ctx, L, d, n, sigma, with_u, tag, restarts):
        res = [SimpleNamespace(status="converged", reason="") for _ in range(restarts)]
        return res, [np.eye(d) for _ in range(restarts)], None, None
    monkeypatch.setattr(figures, "train_exact", trained)
    monkeypatch.setattr(figures, "_fig1_sampled", lambda ctx, L: Finding("sampled", True))
    ctx = _ctx("gatmiry2024.fig1")
    ctx.formulas["limit_dist"] = NAN
    assert figures.fig1_train(ctx).evidence["exact_loss_training"]["ok"] is None
    # no run converged: nothing compared, undecided (not a pass)

    def unconverged(ctx, L, d, n, sigma, with_u, tag, restarts):
        res, A, _, rt = trained(ctx, L, d, n, sigma, with_u, tag, restarts)
        return [SimpleNamespace(status="max_steps", reason="")] * restarts, A, _, rt
    monkeypatch.setattr(figures, "train_exact", unconverged)
    ctx.formulas["limit_dist"] = 0.0
    assert figures.fig1_train(ctx).evidence["exact_loss_training"]["ok"] is None
