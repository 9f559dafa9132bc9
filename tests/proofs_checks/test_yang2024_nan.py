"""yang2024: a formula value that is not a number decides nothing.  Every float search below kept
its largest error with ``if rel > worst`` (or Python's ``max``), which drops a NaN, so a formula
that evaluated to NaN at every point passed; it must leave the finding undecided (ok None)."""
import math

import numpy as np
import pytest

from proofs_checks.yang2024 import (attention, convergence, deterministic_loss, gradient_bounds,
                                    gradients, remarks, softmax)
from verify.claim import BUDGETS, Context
from verify.registry import find


def _ctx(cid):
    c = find(cid)
    F = {f.name: f.parse() for f in c.formulas}
    return Context(cid, F, {f.name: f.text for f in c.formulas}, BUDGETS["quick"], device="cpu",
                   seed=0)


def _nan_values(module, monkeypatch):
    real = module.float_value

    def nan_value(expr, values):
        try:
            v = np.asarray(real(expr, values), dtype=float)
        except ValueError:  # the paper's text ill-typed at these sizes (eq. (33)): a NaN scalar
            return math.nan
        return np.full(v.shape, math.nan) if v.shape else math.nan
    monkeypatch.setattr(module, "float_value", nan_value)


@pytest.mark.parametrize("cid, module, tier, names", [
    ("yang2024.eq45", gradients, gradients.eq45_numeric, ["autograd"]),
    ("yang2024.eq8", attention, lambda ctx: attention._prediction_numeric(ctx, "eq8"),
     ["architecture_float"]),
    ("yang2024.lemma1", softmax, softmax.lemma1_numeric, ["autograd"]),
    ("yang2024.eq33", deterministic_loss, deterministic_loss.eq33_numeric,
     ["target_vs_derived_optimum"]),
    ("yang2024.eq34", deterministic_loss, deterministic_loss.eq34_numeric,
     ["A_float", "A_woodbury_float"]),
    ("yang2024.lemma7", gradient_bounds, gradient_bounds.lemma7_numeric, ["bound_holds"]),
    ("yang2024.lemma9", gradient_bounds, lambda ctx: gradient_bounds._bounds_numeric(ctx, "lemma9"),
     ["b_bound", "delta_bound"]),
    ("yang2024.lemma8", gradient_bounds, lambda ctx: gradient_bounds._bounds_numeric(ctx, "lemma8"),
     ["b_lip", "delta_lip"]),
])
def test_a_formula_that_is_nan_everywhere_is_undecided(monkeypatch, cid, module, tier, names):
    _nan_values(module, monkeypatch)
    ev = tier(_ctx(cid)).evidence
    for name in names:
        assert ev[name]["ok"] is None, (name, ev[name])


def test_eq82_loss_display_that_is_nan_is_undecided(monkeypatch):
    monkeypatch.setattr(gradients, "float_scalar", lambda expr, values: math.nan)
    ctx = _ctx("yang2024.eq82")
    inst = gradients._grad_instance(ctx)
    dyn = gradients.dynamics(inst)
    import torch
    f = gradients._ell_numeric(ctx, ctx.formulas, inst, dyn, torch.Generator().manual_seed(0))
    assert f.ok is None


def test_thm1_with_a_rate_that_is_not_a_number_is_undecided(monkeypatch):
    real = convergence._thm1_constants
    monkeypatch.setattr(convergence, "_thm1_constants",
                        lambda *a: {**real(*a), "rate": math.nan})
    monkeypatch.setattr(convergence, "THM1_BUDGET", {"quick": (1, 5)})
    ev = convergence.thm1_numeric(_ctx("yang2024.thm1")).evidence
    assert ev["inequality_18_paper_rates"]["ok"] is None


def test_footnote_search_that_compared_nothing_or_nan_is_undecided(monkeypatch):
    import mpmath
    ctx = _ctx("yang2024.eq17_footnote")
    monkeypatch.setattr(remarks, "_fn", lambda expr, names: lambda *a: mpmath.mpf("nan"))
    assert remarks.footnote_symbolic(ctx).evidence["61_below_17_formally"]["ok"] is None

    def raises(*a):
        raise ValueError("no value")
    monkeypatch.setattr(remarks, "_fn", lambda expr, names: raises)
    assert remarks.footnote_symbolic(ctx).evidence["61_below_17_formally"]["ok"] is None
