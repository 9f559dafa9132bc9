"""The kit's forward-pass identity: "the model, at the stated weights, outputs the stated
expression of its input", for every input.

A claim gives its model and the claimed output as two functions of one ``Arrays`` (so each is
written once and runs exactly in sympy and in float64 torch), the inputs it quantifies over
(matrices with shapes over size names, and scalars), and sizes.  ``forward_identity`` returns
the claim's tier checks:

- symbolic: every input entry an independent symbol, at each of a few concrete sizes; the
  difference of the two sides expanded to 0 (a polynomial identity in all entries: exact at
  those sizes, not a proof for every size, which the evidence says); a failure carries a
  rational instance where the sides differ;
- numeric: Gaussian inputs at the budget's sizes, many prompts, the model as torch runs it; the
  largest entrywise difference against a float64 rounding allowance, decided by
  ``settle_le`` (non-finite or underflowed numbers decide nothing).

The formulas are read through the context (``--set`` reaches them); a gradient a claimed output
needs is differentiated by the kit (``Arrays.grad``), never taken from a formula.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import sympy
import torch

from models.device import randn
from verify.claim import BUDGETS, Check, Context, ExactValues, TierResult
from verify.evidence import Finding, combine, settle_le, step
from verify.formulas import NamedFormula, shape_value
from verify.sigma import EVERY_SIGMA

from .arrays import Arrays, Exact, Floats

Side = Callable[[Arrays], Any]
EXACT_MAX = 6  # a --size above this applies to the numeric tier only (symbolic entries grow fast)


@dataclass(frozen=True)
class ForwardIdentity:
    """model(a) == claimed(a) for every value of the inputs (see the module docstring)."""

    model: Side
    claimed: Side
    # matrix inputs: name -> shape over size names, or a function of the sizes giving them (one
    # A_i per layer); a shape may carry a third entry "symmetric" (the claim assumes it)
    inputs: Mapping[str, tuple[str, ...]] | Callable[[Mapping[str, int]], Mapping[str, tuple]]
    scalars: Sequence[str] = ()  # scalar inputs (a step size)
    exact_sizes: Sequence[Mapping[str, int]] = ({},)
    sizes: Mapping[str, Mapping[str, int]] = field(default_factory=dict)  # budget -> sizes
    prompts: Mapping[str, int] = field(default_factory=lambda: {"quick": 64, "default": 256,
                                                                "paper": 1024})
    # inputs whose columns are covariates x ~ N(0, Sigma), Sigma from ``covariance(ctx, sizes)``
    # (the claim's setting reads --sigma there); the other inputs are standard Gaussian
    covariates: Sequence[str] = ()
    covariance: Callable[[Context, Mapping[str, int]], Any] | None = None
    what: str = "the model's output"
    # Claim(setting=spec): the runner refuses --size values far above these sizes (exit 2)
    model_latex: str = ""
    claimed_latex: str = ""

    @property
    def fixed_sigma(self) -> str:
        """Why ``--sigma`` does not apply ("" where the covariates take it)."""
        return "" if self.covariance is not None else (
            "the identity holds for every input, with no covariance to choose")


def forward_identity(spec: ForwardIdentity) -> dict[str, Check]:
    """The symbolic and numeric checks of a forward-pass identity."""
    return {"symbolic": lambda ctx: _symbolic(spec, ctx),
            "numeric": lambda ctx: _numeric(spec, ctx)}


def identity_truth(spec: ForwardIdentity, formulas: Sequence[NamedFormula],
                   more_sizes: Sequence[Mapping[str, int]] = ()) -> ExactValues:
    """``Claim(exact=...)`` for ``icl-verify mutate``: a surviving mutant of one of the claim's
    formulas is judged by the exact identity with that formula replaced, at the check's sizes and
    at ``more_sizes`` (a sampled judgement, like the scalar claims' exact values): ``true`` when
    the model still outputs the claimed expression everywhere (W_K changed in a row that W_Q's
    zero block annihilates), ``false`` with the sizes where it does not."""

    def judge(name: str, mutant: sympy.Basic) -> tuple[str, str]:
        F = {f.name: f.parse() for f in formulas}
        F[name] = mutant
        sizes = (*spec.exact_sizes, *more_sizes)
        ctx = Context(claim_id="kit.identity_truth", formulas=F, formula_texts={},
                      budget=BUDGETS["quick"])
        result = _symbolic(replace(spec, exact_sizes=sizes), ctx)
        where = "; ".join(_label(s) for s in sizes)
        if result.status == "pass":
            return "true", (f"the model still outputs the claimed expression exactly with this "
                            f"{name} (every input entry a symbol, at {where})")
        if result.status == "fail":
            return "false", f"the identity fails with this {name}: {result.reason}"
        return "undecided", result.reason or "the identity could not be evaluated"

    return ExactValues(values=lambda point: None, words="the exact forward-pass identity",
                       definition=judge)


def _inputs(spec: ForwardIdentity, sizes: Mapping[str, int]) -> dict[str, tuple]:
    return dict(spec.inputs(sizes) if callable(spec.inputs) else spec.inputs)


def _symbol_matrix(name: str, rows: int, cols: int, symmetric: bool) -> sympy.Matrix:
    if symmetric:
        return sympy.Matrix(rows, cols,
                            lambda i, j: sympy.Symbol(f"{name}_{min(i, j)}_{max(i, j)}"))
    return sympy.Matrix(rows, cols, lambda i, j: sympy.Symbol(f"{name}_{i}_{j}"))


def _symbolic(spec: ForwardIdentity, ctx: Context) -> TierResult:
    findings, rows = [], []
    asked = {k: v for k, v in ctx.sizes.items() if v <= EXACT_MAX}  # larger: numeric only
    for sizes in spec.exact_sizes:
        sizes = {**sizes, **{k: v for k, v in asked.items() if k in sizes}}
        values: dict[str, Any] = {}
        for name, (r, c, *sym) in _inputs(spec, sizes).items():
            values[name] = _symbol_matrix(name, shape_value(r, sizes), shape_value(c, sizes),
                                          bool(sym))
        values.update({s: sympy.Symbol(s) for s in spec.scalars})
        a = Exact(values, ctx.formulas, sizes)
        try:
            diff = (sympy.Matrix(spec.model(a)) - sympy.Matrix(spec.claimed(a))).expand()
        except (ValueError, TypeError, sympy.ShapeError) as exc:
            findings.append(Finding(f"identity_{_label(sizes)}", False, {"sizes": sizes},
                                    {"sizes": sizes, "error": str(exc)},
                                    f"the two sides cannot be compared: {exc}"))
            continue
        nonzero = [(i, j) for i in range(diff.rows) for j in range(diff.cols) if diff[i, j] != 0]
        rows.append({"sizes": sizes, "entries": diff.rows * diff.cols, "differing": len(nonzero)})
        ce = None
        if nonzero:
            ce = _rational_instance(spec, ctx, sizes, values, diff, nonzero[0])
        findings.append(Finding(f"identity_{_label(sizes)}", not nonzero,
                                {"sizes": sizes, "differing_entries": len(nonzero)}, ce,
                                "" if not nonzero else f"{spec.what} differs from the claimed "
                                f"expression in {len(nonzero)} entries at {_label(sizes)}",
                                summary=f"exact in all {diff.rows * diff.cols} entries at "
                                        f"{_label(sizes)}"))
    names = _inputs(spec, spec.exact_sizes[0]) if spec.exact_sizes else {}
    steps = [step("Symbolic inputs", "", "Every entry of " + ", ".join(
                  n + (" (symmetric)" if len(shape) > 2 else "") for n, shape in names.items()) +
                  (" and " + ", ".join(spec.scalars) if spec.scalars else "") +
                  " an independent symbol, at " + "; ".join(_label(r["sizes"]) for r in rows) +
                  ": an identity of polynomials in all entries at these sizes."),
             step("Model", spec.model_latex, "The forward pass, run on sympy matrices."),
             step("Claimed output", spec.claimed_latex,
                  "The named formulas as read (--set reaches them); gradients differentiated "
                  "entry by entry by the kit."),
             step("Identity", r"\text{model} - \text{claimed} = 0", "Expanded exactly.")]
    return combine(findings, {"sizes_checked": rows, "scope": "exact at the sizes listed",
                              "sigma_scope": EVERY_SIGMA}, steps=steps)


def _rational_instance(spec, ctx, sizes, values, diff, entry) -> dict:
    """A rational point where the two sides differ (the difference is a non-zero polynomial,
    so small random rationals find one)."""
    rng = ctx.rng("forward-identity", _label(sizes))
    everything = set().union(*(v.free_symbols for v in values.values()))
    for _ in range(20):
        subs = {s: sympy.Rational(int(rng.integers(-3, 4)), int(rng.integers(1, 3)))
                for s in sorted(everything, key=str)}
        gap = diff[entry].xreplace(subs)
        if gap != 0:
            shown = {name: v.xreplace(subs).tolist() if isinstance(v, sympy.MatrixBase)
                     else v.xreplace(subs) for name, v in values.items()}
            return {"sizes": sizes, "entry": list(entry), "difference": str(gap),
                    "inputs": {k: str(v) for k, v in shown.items()}}
    return {"sizes": sizes, "entry": list(entry), "difference": str(diff[entry])}


def _numeric(spec: ForwardIdentity, ctx: Context) -> TierResult:
    sizes = {**spec.sizes.get(ctx.budget.name, {}), **ctx.sizes}
    if not sizes:
        return TierResult("skipped", reason="no sizes for this budget")
    count = spec.prompts.get(ctx.budget.name, 64)
    gen = torch.Generator().manual_seed(ctx.seed_for("forward-identity", "numeric"))
    root = None
    if spec.covariates and spec.covariance is not None:
        sigma = np.asarray(spec.covariance(ctx, sizes), dtype=float)
        rows = _inputs(spec, sizes)[spec.covariates[0]][0]
        if rows.isidentifier():  # a Sigma given by --sigma sets the covariates' dimension
            sizes = {**sizes, rows: int(sigma.shape[0])}
        w, U = np.linalg.eigh((sigma + sigma.T) / 2)
        with np.errstate(all="ignore"):
            root = torch.as_tensor((U * np.sqrt(np.clip(w, 0, None))) @ U.T, dtype=torch.float64)
    lhs_all, rhs_all, scales = [], [], []
    for k in range(count):
        values: dict[str, Any] = {}
        for name, (r, c, *sym) in _inputs(spec, sizes).items():
            m = randn(shape_value(r, sizes), shape_value(c, sizes), generator=gen,
                      dtype=torch.float64)
            values[name] = (m + m.T) / 2 if sym else root @ m if (
                root is not None and name in spec.covariates) else m
        values.update({s: abs(float(randn(1, generator=gen, dtype=torch.float64))) + 0.1
                       for s in spec.scalars})
        a = Floats(values, ctx.formulas, sizes)
        try:
            lhs = torch.as_tensor(spec.model(a), dtype=torch.float64)
            rhs = torch.as_tensor(spec.claimed(a), dtype=torch.float64)
        except (ValueError, RuntimeError) as exc:
            return combine([Finding("identity_float64", False, {"sizes": sizes},
                                    {"sizes": sizes, "error": str(exc)},
                                    f"the two sides cannot be compared: {exc}")])
        if lhs.shape != rhs.shape:
            return combine([Finding("identity_float64", False, {"sizes": sizes},
                                    {"sizes": sizes, "model_shape": list(lhs.shape),
                                     "claimed_shape": list(rhs.shape)},
                                    "the model's output and the claimed one differ in shape")])
        if k == 0:
            first_draw = {name: float(torch.as_tensor(v).reshape(-1)[0])
                          for name, v in values.items()}
        lhs_all.append(lhs.numpy())
        rhs_all.append(rhs.numpy())
        # float64 rounding allowance: a few hundred ulps of the larger side's magnitude, scaled
        # by the length of the sums that produced it
        scales.append(np.maximum(np.abs(lhs.numpy()), np.abs(rhs.numpy())).max() + 1.0)
    L, R = np.stack(lhs_all), np.stack(rhs_all)
    gap = np.abs(L - R)
    terms = max(sum(sizes.values()), 1) ** 2
    allowance = 64 * terms * np.finfo(np.float64).eps * np.asarray(scales)[:, None, None]
    ok, why = settle_le(gap, np.broadcast_to(allowance, gap.shape))
    with np.errstate(invalid="ignore", divide="ignore"):  # non-finite: settle_le said so
        k = int(np.unravel_index(np.argmax(np.nan_to_num(gap / allowance)), gap.shape)[0])
    worst = float(gap.max())
    i, j = np.unravel_index(int(np.nan_to_num(gap[k]).argmax()), gap[k].shape)
    ce = None if ok is not False else {"sizes": sizes, "prompt": k, "seed": ctx.seed,
                                       "entry": [int(i), int(j)], "model": float(L[k, i, j]),
                                       "claimed": float(R[k, i, j]),
                                       "max_difference": float(gap[k].max()),
                                       "allowance": float(allowance[k, 0, 0])}
    if ok is None and not np.all(np.isfinite(np.concatenate([L.ravel(), R.ravel()]))):
        why = ("float64 cannot hold these numbers (the inputs or the two sides overflow); "
               "the symbolic tier decides exactly")
    finding = Finding("identity_float64", ok,
                      {"sizes": sizes, "prompts": count, "max_difference": worst,
                       "allowance": float(allowance.min()),
                       # the draws the seed picked (a different seed, different prompts)
                       "first_draw": first_draw}, ce,
                      "" if ok else why or f"{spec.what} differs from the claimed expression "
                      f"by {worst:.3g} (allowed {float(allowance[k, 0, 0]):.3g})",
                      summary=f"float64 forward pass within {worst:.1e} of the claimed side over "
                              f"{count} Gaussian draws at {_label(sizes)} (allowance "
                              f"{float(allowance.min()):.1e})")
    steps = [step("Gaussian inputs", "", f"{count} draws of every input at " + _label(sizes) +
                  "; the model run by torch in float64, the claimed side evaluated node by "
                  "node with autograd for its gradients.")]
    return combine([finding], steps=steps)


def _label(sizes: Mapping[str, int]) -> str:
    return ", ".join(f"{k} = {v}" for k, v in sizes.items())
