"""yang2024: T. Yang, Y. Huang, Y. Liang, Y. Chi, "In-Context Learning with Representations:
Contextual Generalization of Trained Transformers" (2024).

One-layer H-head softmax attention (eqs. (5)-(8)) predicts the labels y_k = lambda^T(z_k + eps_k)
(eq. (1)) of all K dictionary tokens from the first N labelled ones; it is trained by GD on the
population loss (9), an expectation over lambda (Assumption 1) and the label noise only.  The model
is linear in the prompt labels, yhat = Ahat(theta)^T y (eq. (35)), so the expectation is a
quadratic in Ahat that the moment kernel derives exactly; every closed form of the paper (Lemma 5,
eqs. (33), (34), (36), (26), (27), Thm. 2) is compared with it.  The dynamics claims (Thm. 1,
Lemmas 6-10, Prop. 1) and the experiments (Figs. 2-5) are checked numerically and by training the
torch model of ``models.softmax``.

Sizes: K tokens in R^d, representations in R^m, prompts of N tokens, H heads, noise level tau.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import sympy
import torch

from models.device import runtime, randn
from models.softmax import (Dictionary, SoftmaxConfig, SoftmaxICL, TaskLaw, attention_weights,
                            coefficient_matrix, full_prediction, head_matrix, predict,
                            random_dictionary, sample_tasks, softmax_columns)
from models.trainers import optimise
from moments.montecarlo import estimate, z_critical
from moments.poly import Poly
from moments.tensor import Mat, gaussian_matrix, gaussian_vector, identity, matrix, vector
from moments.wick import canonical, expectation
from verify.claim import Claim, Context, Correction, ExactValues, TierResult
from verify.errors import UsageError
from verify.evidence import Closest, Finding, Margin, as_stand_ins, combine, smaller_than_paper, step
from verify.formulas import FormulaSymbol, NamedFormula

from .yang2024_definitions import DEFINITIONS  # noqa: F401  (the paper's definitions)

PAPER = "yang2024"
TAU_SYM = sympy.Symbol("tau", positive=True)
SIZE = {s: sympy.Symbol(s, positive=True, integer=True) for s in ("m", "N", "K", "d", "H")}
LEVEL = 0.999  # confidence level of every Monte Carlo interval (Bonferroni over comparisons)

# ==============================================================================================
# The setting: sizes per budget, instances, the derived loss
# ==============================================================================================
SIZE_NAMES = ("K", "d", "m", "N", "H")
BUDGET_SIZES = {
    "quick": {"K": 10, "d": 4, "m": 3, "N": 4, "H": 6},
    "default": {"K": 24, "d": 8, "m": 4, "N": 6, "H": 12},
    "paper": {"K": 200, "d": 100, "m": 20, "N": 30, "H": 64},
}
BUDGET_TAU = {"quick": 0.25, "default": 0.1, "paper": 0.01}


@dataclass(frozen=True)
class SoftmaxICLSetting:
    """The data law of eq. (1) and Assumption 1 on a random dictionary; sizes per budget."""

    sizes: Mapping[str, Mapping[str, int]] = field(default_factory=lambda: BUDGET_SIZES)

    def resolve(self, budget: str, overrides: Mapping[str, int]) -> dict[str, int]:
        s = dict(self.sizes[budget])
        for k, v in overrides.items():
            if k not in s:
                raise UsageError(f"--size {k}: yang2024 has sizes {', '.join(SIZE_NAMES)}")
            s[k] = int(v)
        if s["N"] > s["K"]:
            raise UsageError(f"sizes N={s['N']} > K={s['K']} are impossible: the prompt holds N of "
                             f"the K dictionary tokens")
        if s["d"] < 2:
            raise UsageError("size d=1 is impossible: unit-norm tokens in R^1 are +-1, so a "
                             "dictionary of distinct tokens (Assumption 3) has at most 2 of them")
        return s

    def validate(self, sizes: Mapping[str, int], sigma: Any) -> None:
        if sigma is not None:
            raise UsageError("--sigma does not apply to yang2024 (lambda has identity "
                             "covariance by Assumption 1)")
        self.resolve("quick", sizes)

    def describe(self) -> dict:
        return {"tokens": "v_k ~ N(0, I_d) normalised to unit norm", "representation":
                "z_k = f(v_k) ~ N(0, I_m)", "lambda": "independent entries, mean 0, variance 1",
                "noise": "eps_k ~ N(0, tau I_m)", "sizes": {k: dict(v) for k, v in self.sizes.items()}}


SETTING = SoftmaxICLSetting()


@dataclass(frozen=True)
class Instance:
    """A dictionary (float64, cpu), the noise level and the sizes it was drawn at."""

    sizes: Mapping[str, int]
    tau: float
    dictionary: Dictionary
    seed: int

    @property
    def K(self) -> int:
        return self.sizes["K"]

    @property
    def N(self) -> int:
        return self.sizes["N"]

    @property
    def m(self) -> int:
        return self.sizes["m"]

    @property
    def d(self) -> int:
        return self.sizes["d"]

    @property
    def H(self) -> int:
        return self.sizes["H"]

    def as_dict(self) -> dict:
        return {**dict(self.sizes), "tau": self.tau, "dictionary_seed": self.seed,
                "dictionary": "v_k ~ N(0, I_d) normalised, z_k ~ N(0, I_m)"}


def make_instance(ctx: Context, tag: str = "instance", sizes: Mapping[str, int] | None = None,
                  tau: float | None = None) -> Instance:
    s = SETTING.resolve(ctx.budget.name, ctx.sizes) if sizes is None else dict(sizes)
    seed = ctx.seed_for(tag)
    gen = torch.Generator().manual_seed(seed)
    D = random_dictionary(s["K"], s["d"], s["m"], s["N"], gen)
    return Instance(s, BUDGET_TAU[ctx.budget.name] if tau is None else tau, D, seed)


@contextlib.contextmanager
def few_threads(n: int = 1):
    """Tiny tensors on a shared CPU: one intra-op thread avoids oversubscription stalls."""
    old = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(old)


def small_threads(check: Callable[[Context], TierResult]) -> Callable[[Context], TierResult]:
    """Run a check with one torch thread unless it runs at the paper's sizes (see few_threads)."""

    def run(ctx: Context) -> TierResult:
        if ctx.budget.name == "paper":
            return check(ctx)
        with few_threads(1):
            return check(ctx)

    run.__name__ = getattr(check, "__name__", "check")
    run.__doc__ = check.__doc__
    return run


# ----------------------------------------------------------------------------------------------
# The population loss (9), derived from the model (8) and the task law (1) by the moment kernel
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class TokenLosses:
    """L_k(a) = (1/2) E_{lambda, eps}[(yhat_k - y_k)^2] with yhat_k = <y, a> (eq. (8)).

    ``prompt``: a token of the prompt (k <= N): z_k = Z e and eps_k = eps^P e (e = e_k);
    ``query``: a token outside it (k > N): z_k = z, eps_k independent of eps^P.
    """

    prompt: Poly
    query: Poly
    prompt_grad: Poly
    query_grad: Poly


def _task_letters():
    lam = gaussian_vector("lam", "m", latex="\\lambda")  # E[lam lam^T] = I (Assumption 1)
    Ep = gaussian_matrix("Eps", "m", "N", latex="\\varepsilon^{P}/\\sqrt{\\tau}")
    return lam, Ep


@lru_cache(maxsize=None)
def token_losses() -> TokenLosses:
    """Derive L_k from y = (Z + eps^P)^T lambda (eq. (73)) and y_k = lambda^T(z_k + eps_k) (1)."""
    lam, Ep = _task_letters()
    Z = matrix("Z", "m", "N")
    a = vector("a", "N", latex="\\hat a_k")
    e = vector("e", "N", latex="e_k")
    z = vector("z", "m", latex="z_k")
    eps_q = gaussian_vector("eps", "m", latex="\\varepsilon_k/\\sqrt{\\tau}")
    r = sympy.sqrt(TAU_SYM)
    y = (Z + Ep * r).T @ lam                                  # prompt labels, eq. (73)
    yhat = predict(y, a)                                      # eq. (8): <y, a>
    half = sympy.Rational(1, 2)
    err_p = yhat - lam.T @ (Z @ e + (Ep @ e) * r)             # k <= N: the prompt's own token
    err_q = yhat - lam.T @ (z + eps_q * r)                    # k > N: an unseen token
    Lp = expectation(err_p * err_p).scale(half).simplify()
    Lq = expectation(err_q * err_q).scale(half).simplify()
    return TokenLosses(Lp, Lq, Lp.diff("a"), Lq.diff("a"))


def _loss_steps() -> list:
    tl = token_losses()
    return [
        step("Model and labels",
             r"\hat y_k = \langle y, \hat a_k\rangle,\quad y = (Z+\varepsilon^P)^\top\lambda,\quad "
             r"y_k = \lambda^\top(z_k+\varepsilon_k)",
             "eq. (8) (yhat is linear in the prompt labels y, with a_k the k-th column of Ahat, "
             "eq. (35)), eq. (73) and eq. (1); for a prompt token z_k = Z e_k, eps_k = eps^P e_k."),
        step("Moments", r"\mathbb E[\lambda\lambda^\top] = I_m,\quad "
             r"\mathbb E[\varepsilon_i\varepsilon_j^\top] = \tau I_m\,\delta_{ij}",
             "Assumption 1 and eq. (1).  The integrand is quadratic in lambda, so any law with "
             "independent mean-0 variance-1 entries gives the same expectation (Isserlis is applied "
             "with a Gaussian lambda of the same second moments)."),
        step("Prompt token (k <= N)", r"\mathcal L_k(\hat a) = " + tl.prompt.latex(),
             "Wick expectation over lambda and eps^P; m is the size of the representation space."),
        step("Query token (k > N)", r"\mathcal L_k(\hat a) = " + tl.query.latex(),
             "eps_k is independent of the prompt noise: its variance m tau stays in the loss."),
        step("Gradients", r"\nabla_{\hat a}\mathcal L_k = " + tl.prompt_grad.latex() + r"\ \ (k\le N),"
             r"\qquad " + tl.query_grad.latex() + r"\ \ (k>N)",
             "Affine in a: the loss is a convex quadratic in each column of Ahat."),
    ]


# ----------------------------------------------------------------------------------------------
# Exact instances (sympy, tau symbolic) and the derived quadratic on them
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class ExactInstance:
    """Rational Zhat (m x K) with Z = Zhat[:, :N]; tau stays a symbol."""

    m: int
    N: int
    K: int
    Zhat: sympy.Matrix

    @property
    def Z(self) -> sympy.Matrix:
        return self.Zhat[:, :self.N]

    @property
    def J(self) -> sympy.Matrix:
        """(I_N, 0) in R^{N x K}."""
        return sympy.Matrix.hstack(sympy.eye(self.N), sympy.zeros(self.N, self.K - self.N))

    def e(self, k: int) -> sympy.Matrix:
        v = sympy.zeros(self.N, 1)
        v[k] = 1
        return v

    def as_dict(self) -> dict:
        return {"m": self.m, "N": self.N, "K": self.K, "tau": "symbolic",
                "Zhat": [[str(v) for v in row] for row in self.Zhat.tolist()]}


def exact_instances(ctx: Context, shapes: Sequence[tuple[int, int]] = ((2, 3), (3, 2)),
                    extra_queries: int = 2) -> list[ExactInstance]:
    """Small rational instances with m < N and m > N (the two regimes of the paper)."""
    rng = ctx.rng("exact-instances")
    out = []
    for m, N in shapes:
        K = N + extra_queries
        vals = [sympy.Rational(int(rng.integers(-4, 5)), int(rng.integers(1, 3))) for _ in range(m * K)]
        out.append(ExactInstance(m, N, K, sympy.Matrix(m, K, vals)))
    return out


def _sizes_scalars(m: int, N: int, K: int | None = None, tau=TAU_SYM) -> dict:
    out = {"m": m, "N": N, "tau": tau}
    if K is not None:
        out["K"] = K
    return out


def exact_quadratic(inst: ExactInstance, tau=TAU_SYM) -> tuple[sympy.Matrix, sympy.Matrix, list]:
    """(G, B, c) with L_k(a) = a^T G a / 2 - a^T b_k + c_k / 2, read off the derived polynomials.

    Each L_k is evaluated exactly at a vector of symbols a; G is its Hessian, b_k = -grad L_k(0)
    and c_k = 2 L_k(0).
    """
    key = (inst.m, inst.N, inst.K, sympy.ImmutableMatrix(inst.Zhat), tau)
    if key in _QUADRATIC_CACHE:
        return _QUADRATIC_CACHE[key]
    tl = token_losses()
    N, K = inst.N, inst.K
    sc = _sizes_scalars(inst.m, N, tau=tau)
    a_syms = sympy.symbols(f"a0:{N}")
    a = sympy.Matrix(a_syms)
    G, B_cols, c = None, [], []
    for k in range(K):
        if k < N:
            L = tl.prompt.evaluate({"Z": inst.Z, "e": inst.e(k), "a": a}, sc, exact=True)
        else:
            L = tl.query.evaluate({"Z": inst.Z, "z": inst.Zhat[:, k], "a": a}, sc, exact=True)
        L = sympy.expand(L)
        Gk = sympy.hessian(L, a_syms)
        if G is None:
            G = Gk
        elif (Gk - G).applyfunc(sympy.expand) != sympy.zeros(N, N):
            raise AssertionError("the quadratic part of L_k depends on k")
        at0 = {s: 0 for s in a_syms}
        B_cols.append(-sympy.Matrix([sympy.diff(L, s) for s in a_syms]).subs(at0))
        c.append(2 * L.subs(at0))
    out = (G, sympy.Matrix.hstack(*B_cols), c)
    _QUADRATIC_CACHE[key] = out
    return out


_QUADRATIC_CACHE: dict = {}


def tau_points(N: int) -> list:
    """Distinct rational noise levels at which an identity in tau is checked exactly.

    Every paper formula here is (polynomial in the letters) / det(Z^T Z + m tau I) with a numerator of
    degree <= N + 2 in tau, and the derived loss is affine in tau, so agreement at N + 4 distinct
    values proves agreement as rational functions of tau.
    """
    return [sympy.Rational(2 * i + 1, 7) for i in range(N + 4)]


def exact_optimum(inst: ExactInstance) -> tuple[sympy.Matrix, list]:
    """The derived minimiser of every L_k (columns) and the minimum values L_k(a*), exactly."""
    G, B, c = exact_quadratic(inst)
    Ginv = G.inv()
    Astar = (Ginv * B).applyfunc(sympy.cancel)
    mins = [sympy.cancel(c[k] / 2 - (B[:, k].T * Ginv * B[:, k])[0, 0] / 2) for k in range(inst.K)]
    return Astar, mins


# ----------------------------------------------------------------------------------------------
# Float instances: the derived quadratic in float64 (numpy) and as a torch loss
# ----------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class FloatQuadratic:
    """L(Ahat) = (1/K) sum_k [a_k^T G a_k / 2 - a_k^T b_k + c_k / 2] with G, B, c derived."""

    G: np.ndarray
    B: np.ndarray
    c: np.ndarray

    @property
    def K(self) -> int:
        return self.B.shape[1]

    @property
    def A(self) -> np.ndarray:
        """The derived minimiser (the columns of the optimal Ahat)."""
        return np.linalg.solve(self.G, self.B)

    @property
    def L_star(self) -> float:
        return float((0.5 * self.c.sum() - 0.5 * np.sum(self.B * self.A)) / self.K)

    def loss(self, Ahat: np.ndarray) -> float:
        return float((0.5 * np.sum(Ahat * (self.G @ Ahat)) - np.sum(Ahat * self.B)
                      + 0.5 * self.c.sum()) / self.K)

    def torch_loss(self, dtype=torch.float64, device="cpu") -> Callable[[torch.Tensor], torch.Tensor]:
        G = torch.tensor(self.G, dtype=dtype, device=device)
        B = torch.tensor(self.B, dtype=dtype, device=device)
        csum = float(self.c.sum())
        K = self.K

        def loss(Ahat: torch.Tensor) -> torch.Tensor:
            return (0.5 * (Ahat * (G @ Ahat)).sum() - (Ahat * B).sum() + 0.5 * csum) / K

        return loss

    def excess(self, dtype=torch.float64, device="cpu") -> Callable[[torch.Tensor], torch.Tensor]:
        """L(Ahat) - L* = (1/2K) tr((Ahat - A)^T G (Ahat - A)), the numerically stable form."""
        G = torch.tensor(self.G, dtype=dtype, device=device)
        A = torch.tensor(self.A, dtype=dtype, device=device)
        K = self.K

        def gap(Ahat: torch.Tensor) -> torch.Tensor:
            R = Ahat - A
            return 0.5 * (R * (G @ R)).sum() / K

        return gap


def float_quadratic(inst: Instance) -> FloatQuadratic:
    """Evaluate the derived polynomials at a float instance (batched over the K tokens)."""
    tl = token_losses()
    D = inst.dictionary
    N, K, m = inst.N, inst.K, inst.m
    Z = D.Z.numpy()
    Zhat = D.Zhat.numpy()
    sc = {"m": m, "N": N, "tau": inst.tau}
    eyeN = np.eye(N)
    e_batch = eyeN[:, :, None]                   # (N, N, 1): e_k for the prompt tokens
    z_batch = Zhat[:, N:].T[:, :, None]          # (K - N, m, 1)

    def batch(grad, env, count):
        zero = np.zeros((count, N, 1))
        g0 = np.asarray(grad.evaluate({**env, "a": zero}, sc)).reshape(count, N)
        cols = []
        for i in range(N):
            ai = np.broadcast_to(eyeN[:, [i]], (count, N, 1)).copy()
            cols.append(np.asarray(grad.evaluate({**env, "a": ai}, sc)).reshape(count, N) - g0)
        Gs = np.stack(cols, axis=-1)             # (count, N, N)
        return Gs, -g0

    Gp, Bp = batch(tl.prompt_grad, {"Z": Z, "e": e_batch}, N)
    parts_G, parts_B = [Gp], [Bp]
    cp = 2 * np.asarray(tl.prompt.evaluate({"Z": Z, "e": e_batch, "a": np.zeros((N, N, 1))}, sc))
    cs = [np.broadcast_to(cp, (N,))]
    if K > N:
        Gq, Bq = batch(tl.query_grad, {"Z": Z, "z": z_batch}, K - N)
        parts_G.append(Gq)
        parts_B.append(Bq)
        cq = 2 * np.asarray(tl.query.evaluate({"Z": Z, "z": z_batch, "a": np.zeros((K - N, N, 1))}, sc))
        cs.append(np.broadcast_to(cq, (K - N,)))
    Gall = np.concatenate(parts_G)
    G = Gall.mean(0)
    if not np.allclose(Gall, G, rtol=1e-12, atol=1e-12):
        raise AssertionError("the quadratic part of L_k depends on k")
    return FloatQuadratic(G, np.concatenate(parts_B).T, np.concatenate(cs).astype(float))


# ----------------------------------------------------------------------------------------------
# Formulas: type checking, conversion to moment polynomials, exact and float values
# ----------------------------------------------------------------------------------------------
def _same(a, b) -> bool:
    return sympy.simplify(sympy.sympify(a) - sympy.sympify(b)) == 0


def shape_errors(expr: sympy.Basic) -> list[str]:
    """Every sum of differently shaped matrices and every product with mismatched inner sizes.

    sympy builds such expressions without complaint (MatAdd takes the first argument's shape), so
    a printed formula is type-checked here, with the sizes kept symbolic (m != N != K).
    """
    errors: list[str] = []
    seen = set()

    def walk(e):
        if id(e) in seen or not isinstance(e, sympy.Basic):
            return
        seen.add(id(e))
        for arg in e.args:
            walk(arg)
        if isinstance(e, sympy.MatAdd):
            shapes = [a.shape for a in e.args]
            for s, a in zip(shapes[1:], e.args[1:]):
                if not (_same(s[0], shapes[0][0]) and _same(s[1], shapes[0][1])):
                    errors.append(f"{sympy.sstr(e.args[0])} is {shapes[0][0]}x{shapes[0][1]} but "
                                  f"{sympy.sstr(a)} is {s[0]}x{s[1]} in the sum {sympy.sstr(e)}")
        elif isinstance(e, sympy.MatMul):
            mats = [a for a in e.args if getattr(a, "is_Matrix", False)]
            for left, right in zip(mats, mats[1:]):
                if not _same(left.shape[1], right.shape[0]):
                    errors.append(f"{sympy.sstr(left)} ({left.shape[0]}x{left.shape[1]}) times "
                                  f"{sympy.sstr(right)} ({right.shape[0]}x{right.shape[1]}): inner "
                                  f"sizes differ")
        elif isinstance(e, (sympy.Inverse, sympy.Trace)) or (
                isinstance(e, sympy.MatPow)):
            arg = e.args[0]
            if getattr(arg, "is_Matrix", False) and not _same(arg.shape[0], arg.shape[1]):
                errors.append(f"{type(e).__name__} of the non-square {sympy.sstr(arg)}")

    walk(expr)
    return errors


def dimension_finding(ctx: Context, names: Sequence[str]) -> Finding:
    """A finding that fails when a named formula does not type-check (sizes symbolic)."""
    report, bad = {}, {}
    for name in names:
        errs = shape_errors(ctx.formulas[name])
        report[name] = "type-checks" if not errs else errs
        if errs:
            bad[name] = {"formula": ctx.formula_texts[name], "errors": errs}
    ok = not bad
    return Finding("dimensions", ok, {"formulas": report,
                                      "rule": "sums need equal shapes, products equal inner sizes; "
                                              "m, N, K, d, H are distinct symbols"},
                   None if ok else {"ill_typed": bad},
                   "" if ok else f"{', '.join(bad)} does not type-check: {next(iter(bad.values()))['errors'][0]}")


def _letter_space(dim) -> str:
    if dim == 1:
        return "1"
    if isinstance(dim, sympy.Symbol):
        return dim.name
    raise NotImplementedError(f"dimension {dim} is not a single size")


def to_mat(expr: sympy.Basic, symmetric: frozenset = frozenset()) -> Mat:
    """A sympy matrix expression (no inverses) as a moment-kernel expression over letters."""
    if isinstance(expr, sympy.MatrixSymbol):
        rows, cols = (_letter_space(s) for s in expr.shape)
        if cols == "1":
            return vector(expr.name, rows)
        return matrix(expr.name, rows, cols, symmetric=expr.name in symmetric)
    if isinstance(expr, sympy.Identity):
        return identity(_letter_space(expr.rows))
    if isinstance(expr, sympy.ZeroMatrix):
        from moments.tensor import zeros
        return zeros(_letter_space(expr.rows), _letter_space(expr.cols))
    if isinstance(expr, sympy.Transpose):
        return to_mat(expr.args[0], symmetric).T
    if isinstance(expr, sympy.MatAdd):
        out = None
        for a in expr.args:
            t = to_mat(a, symmetric)
            out = t if out is None else out + t
        return out
    if isinstance(expr, (sympy.MatMul, sympy.Mul)):
        coeff = sympy.Integer(1)
        out = None
        for a in expr.args:
            if getattr(a, "is_Matrix", False):
                t = to_mat(a, symmetric)
                out = t if out is None else out @ t
            else:
                coeff *= a
        if out is None:
            return Mat.scalar(coeff)
        return out.scale(coeff)
    if isinstance(expr, sympy.Add):
        out = None
        for a in expr.args:
            t = to_mat(a, symmetric)
            out = t if out is None else out + t
        return out
    if not getattr(expr, "is_Matrix", False):
        return Mat.scalar(expr)
    raise NotImplementedError(f"{type(expr).__name__} is not supported by the moment kernel")


def float_value(expr: sympy.Basic, values: Mapping[str, Any]) -> Any:
    """Float64 value of a formula on numpy arrays (sizes, scalars and matrices from ``values``)."""
    return _evaluate(expr, values, exact=False)


def exact_value(expr: sympy.Basic, values: Mapping[str, Any]) -> Any:
    """Exact value of a formula on sympy matrices (symbols such as tau may stay symbolic).

    A 1x1 result is returned as a scalar.
    """
    v = _evaluate(expr, values, exact=True)
    if isinstance(v, sympy.MatrixBase) and v.shape == (1, 1):
        return v[0, 0]
    return v


def _evaluate(expr: sympy.Basic, values: Mapping[str, Any], exact: bool) -> Any:
    """A small recursive evaluator of matrix formulas (numpy's printer has no trace, and sympy's
    ``doit`` leaves inverses of symbolic-entry matrices alone).  A sum of differently shaped
    matrices raises ``ValueError`` instead of broadcasting."""
    ev = lambda e: _evaluate(e, values, exact)  # noqa: E731

    def size(x) -> int:
        return int(_scalar(x, values, False))

    if isinstance(expr, sympy.MatrixSymbol):
        v = values[expr.name]
        return sympy.Matrix(v) if exact else np.asarray(v, dtype=float)
    if isinstance(expr, sympy.Identity):
        return sympy.eye(size(expr.rows)) if exact else np.eye(size(expr.rows))
    if isinstance(expr, (sympy.ZeroMatrix, sympy.OneMatrix)):
        r, c = size(expr.rows), size(expr.cols)
        fill = 0 if isinstance(expr, sympy.ZeroMatrix) else 1
        return sympy.ones(r, c) * fill if exact else np.full((r, c), float(fill))
    if isinstance(expr, sympy.Transpose):
        return ev(expr.args[0]).T
    if isinstance(expr, sympy.Inverse):
        M = ev(expr.args[0])
        return sympy.Matrix(_exact_inverse(sympy.ImmutableMatrix(M))) if exact else np.linalg.inv(M)
    if isinstance(expr, sympy.Trace):
        M = ev(expr.args[0])
        return M.trace() if exact else float(np.trace(M))
    if isinstance(expr, sympy.MatPow):
        base = ev(expr.args[0])
        p = sympy.sympify(expr.args[1])
        if p.is_integer:
            return base ** int(p) if exact else np.linalg.matrix_power(base, int(p))
        if exact:
            raise NotImplementedError("a fractional matrix power has no exact rational value")
        w, U = np.linalg.eigh((base + base.T) / 2)
        return (U * np.clip(w, 0, None) ** float(p)) @ U.T
    if isinstance(expr, (sympy.MatAdd, sympy.Add)):
        parts = [ev(a) for a in expr.args]
        shapes = {tuple(p.shape) if hasattr(p, "shape") and (exact and isinstance(p, sympy.MatrixBase)
                                                           or not exact and np.ndim(p) == 2) else ()
                  for p in parts}
        if len(shapes) > 1:
            raise ValueError(f"cannot add shapes {sorted(shapes)} in {sympy.sstr(expr)}")
        out = parts[0]
        for p in parts[1:]:
            out = out + p
        return out
    if isinstance(expr, (sympy.MatMul, sympy.Mul)):
        coeff, out = sympy.Integer(1) if exact else 1.0, None
        for a in expr.args:
            v = ev(a)
            if (exact and isinstance(v, sympy.MatrixBase)) or (not exact and np.ndim(v) == 2):
                out = v if out is None else out * v if exact else out @ v
            else:
                coeff = coeff * v
        return coeff if out is None else out * coeff if exact else coeff * out
    if isinstance(expr, sympy.Pow) and not getattr(expr, "is_Matrix", False):
        return ev(expr.args[0]) ** ev(expr.args[1])
    if isinstance(expr, sympy.Function) and not getattr(expr, "is_Matrix", False):
        args = [ev(a) for a in expr.args]
        out = type(expr)(*[sympy.sympify(a) for a in args])
        return out if exact else float(out.evalf())
    return _scalar(expr, values, exact)


@lru_cache(maxsize=256)
def _exact_inverse(M: sympy.ImmutableMatrix) -> sympy.ImmutableMatrix:
    """Exact inverse (entries rational in tau), cached: a formula's inverse recurs for every token."""
    return sympy.ImmutableMatrix(M.inv().applyfunc(sympy.cancel))


def _scalar(expr, values, exact: bool):
    expr = sympy.sympify(expr)
    subs = {s: values[s.name] for s in expr.free_symbols if s.name in values}
    out = expr.subs(subs)
    return out if exact else float(out.evalf())


# ----------------------------------------------------------------------------------------------
# Small shared helpers
# ----------------------------------------------------------------------------------------------
def _rational_str(x) -> str:
    return str(sympy.nsimplify(x)) if isinstance(x, sympy.Basic) else str(x)


def _first_nonzero(M: sympy.Matrix) -> tuple[int, int] | None:
    for i in range(M.shape[0]):
        for j in range(M.shape[1]):
            if sympy.cancel(sympy.together(M[i, j])) != 0:
                return i, j
    return None


def _at_tau(x, tau=sympy.Rational(1, 4)):
    return sympy.nsimplify(sympy.sympify(x).subs(TAU_SYM, tau))


def _mc_compare(name: str, samples: np.ndarray, targets: Mapping[str, float], comparisons: int,
                decide: Sequence[str], extra: dict | None = None) -> Finding:
    """A Monte Carlo mean against exact values; the ``decide`` ones must lie in the interval."""
    est = estimate(samples)
    lo, hi = est.interval(LEVEL, comparisons)
    rows = {k: {"value": float(v), "z": est.z_score(float(v)),
                "inside": bool(est.agrees(float(v), LEVEL, comparisons))} for k, v in targets.items()}
    ok = all(rows[k]["inside"] for k in decide)
    ev = {"monte_carlo": est.as_dict(LEVEL, comparisons), "targets": rows, **(extra or {})}
    bad = [k for k in decide if not rows[k]["inside"]]
    return Finding(name, ok, ev, None if ok else {
        "monte_carlo_mean": est.mean, "ci": [lo, hi], **{k: rows[k]["value"] for k in bad}, **(extra or {})},
        "" if ok else f"{', '.join(bad)} = {rows[bad[0]]['value']:.6g} lies outside the Monte Carlo "
                      f"interval [{lo:.6g}, {hi:.6g}]")


# ==============================================================================================
# Formula symbols shared by the claims (what each is: DEFINITIONS, yang2024_definitions.py)
# ==============================================================================================
_m = FormulaSymbol("m")
_N = FormulaSymbol("N")
_K = FormulaSymbol("K")
_H = FormulaSymbol("H")
_d = FormulaSymbol("d")
_tau = FormulaSymbol("tau", positive=True)
_Z = FormulaSymbol("Z", "matrix", ("m", "N"))
_Zhat = FormulaSymbol("Zhat", "matrix", ("m", "K"))
_J = FormulaSymbol("J", "matrix", ("N", "K"))
_zk = FormulaSymbol("z_k", "matrix", ("m", "1"))
# one-hot: e_1 stands for every e_k (the formulas are equivariant under permuting the tokens)
_ek = FormulaSymbol("e_k", "matrix", ("N", "1"), equals="eye(N)[:, 0]")
# a prompt token's feature is a column of Z: z_k = Z e_k (k <= N)
_zk_prompt = FormulaSymbol("z_k", "matrix", ("m", "1"), equals="Z*e_k")
_DELTA_SIGN = "Lemma 5 uses delta_k only through ||Zbar delta_k||^2"
_ak = FormulaSymbol("Ahat_k", "matrix", ("N", "1"))
_Ahat = FormulaSymbol("Ahat", "matrix", ("N", "K"))
_y = FormulaSymbol("y", "matrix", ("N", "1"))

G_TEXT = "(Z.T*Z + m*tau*Identity(N))"
A_TEXT = f"Inverse{G_TEXT}*(Z.T*Zhat + m*tau*J)"

# ==============================================================================================
# Lemma 5: the deterministic form of the loss (36) with delta_k (33) and L*
# ==============================================================================================
LEMMA5_FORMULAS = (
    NamedFormula("Zbar_sq", "Z.T*Z + m*tau*Identity(N)", (_m, _N, _tau, _Z), equation="(12)",
                 shape=("N", "N"), description="Zbar^2 with Zbar = (Z^T Z + m tau I_N)^{1/2}, so "
                 "||Zbar x||^2 = x^T Zbar^2 x (Zbar is symmetric)"),
    NamedFormula("delta_prompt", f"Ahat_k - Inverse{G_TEXT}*(z_k + m*tau*e_k)",
                 (_m, _N, _tau, _Z, _zk_prompt, _ek, _ak), equation="(33), k in [N]",
                 shape=("N", "1"), description="delta_k for a prompt token, as printed",
                 sign_free=_DELTA_SIGN),
    NamedFormula("delta_query", f"Ahat_k - Inverse{G_TEXT}*z_k",
                 (_m, _N, _tau, _Z, _zk, _ak), equation="(33), k in [K] minus [N]", shape=("N", "1"),
                 description="delta_k for a query token, as printed", sign_free=_DELTA_SIGN),
    NamedFormula("c_prompt", f"-trace((Z.T*z_k + m*tau*e_k).T*Inverse{G_TEXT}*(Z.T*z_k + m*tau*e_k))"
                             " + trace(z_k.T*z_k) + m*tau",
                 (_m, _N, _tau, _Z, _zk_prompt, _ek),
                 equation="L* in Lemma 5 (first sum), c_k of (78)",
                 description="2K times the contribution of a prompt token to L*"),
    NamedFormula("c_query", f"-trace((Z.T*z_k).T*Inverse{G_TEXT}*(Z.T*z_k)) + trace(z_k.T*z_k)",
                 (_m, _N, _tau, _Z, _zk), equation="L* in Lemma 5 (second sum), c'_k of (79)",
                 description="2K times the contribution of a query token to L*"),
)

LEMMA5_CORRECTION = Correction(
    description="delta_k uses Z^T z_k (not z_k) in eq. (33), and the query-token constant c'_k "
                "of L* gains + m tau",
    reason="(33) adds the m-vector z_k to the N-vector e_k and multiplies it by an N x N matrix; "
           "(78) and L* itself use Z^T z_k.  A query token's label y_k = lambda^T(z_k + eps_k) "
           "carries noise independent of the prompt, E[(lambda^T eps_k)^2] = m tau (eq. (77) with "
           "1{k in [N]} = 0), which no prediction removes: c'_k misses it",
    formulas={
        "delta_prompt": f"Ahat_k - Inverse{G_TEXT}*(Z.T*z_k + m*tau*e_k)",
        "delta_query": f"Ahat_k - Inverse{G_TEXT}*Z.T*z_k",
        "c_query": f"-trace((Z.T*z_k).T*Inverse{G_TEXT}*(Z.T*z_k)) + trace(z_k.T*z_k) + m*tau",
    })


def _safe_exact(expr, values):
    """Exact value, or (None, reason) when the formula cannot be evaluated (shape errors)."""
    try:
        return exact_value(expr, values), ""
    except Exception as exc:  # sympy raises ShapeError / TypeError for ill-typed formulas
        return None, f"{type(exc).__name__}: {exc}"


def _token_values(inst: ExactInstance, k: int, a) -> dict:
    vals = {"Z": inst.Z, "z_k": inst.Zhat[:, k], "Ahat_k": a, **_sizes_scalars(inst.m, inst.N)}
    if k < inst.N:
        vals["e_k"] = inst.e(k)
    return vals


def _lemma5_exact(F, texts, insts, names=("delta_prompt", "delta_query", "c_prompt", "c_query")):
    """Compare the paper's per-token loss (1/2)||Zbar delta_k||^2 + c_k/2 with the derived L_k.

    Exact in the entries of a = Ahat_k (symbols) at the noise levels of ``tau_points`` (which
    decides the identity for every tau); a disagreement is reported as a function of tau.
    """
    findings = []
    per = {"prompt": {"identity": [], "constant": []}, "query": {"identity": [], "constant": []}}
    fails: dict = {}
    for inst in insts:
        a = sympy.Matrix(sympy.symbols(f"a0:{inst.N}"))
        for k in range(inst.K):
            kind = "prompt" if k < inst.N else "query"
            c_ok, id_ok, why = True, True, ""
            for tau in tau_points(inst.N):
                G, B, c = exact_quadratic(inst, tau)
                Ginv = G.inv()
                derived = sympy.expand((a.T * G * a)[0, 0] / 2 - (a.T * B[:, k])[0, 0] + c[k] / 2)
                derived_min = c[k] / 2 - (B[:, k].T * Ginv * B[:, k])[0, 0] / 2
                vals = {**_token_values(inst, k, a), "tau": tau}
                cval, why_c = _safe_exact(F[f"c_{kind}"], vals)
                if cval is None:
                    why = why or why_c
                    c_ok = None
                elif c_ok and sympy.nsimplify(cval / 2 - derived_min) != 0:
                    c_ok = False
                dval, why_d = _safe_exact(F[f"delta_{kind}"], vals)
                Zsq, why_z = _safe_exact(F["Zbar_sq"], vals)
                if dval is None or Zsq is None or cval is None:
                    id_ok = None
                    why = why or why_d or why_z or why_c
                    continue
                if id_ok and sympy.expand((dval.T * Zsq * dval)[0, 0] / 2 + cval / 2 - derived) != 0:
                    id_ok = False
            per[kind]["constant"].append({"instance": (inst.m, inst.N), "k": k, "agree": c_ok})
            per[kind]["identity"].append({"instance": (inst.m, inst.N), "k": k, "agree": id_ok})
            if c_ok is None:
                fails.setdefault(f"L_star_{kind}", (None, why))
            elif c_ok is False and f"L_star_{kind}" not in fails:
                fails[f"L_star_{kind}"] = (False, _lemma5_report(F, inst, k, a, "constant"))
            if id_ok is None:
                fails.setdefault(f"loss_identity_{kind}", (None, why))
            elif id_ok is False and f"loss_identity_{kind}" not in fails:
                fails[f"loss_identity_{kind}"] = (False, _lemma5_report(F, inst, k, a, "identity"))
    for kind in ("prompt", "query"):
        for part, label in (("identity", "loss_identity"), ("constant", "L_star")):
            name = f"{label}_{kind}"
            rows = per[kind][part]
            if name in fails:
                ok, info = fails[name]
                if ok is None:
                    findings.append(Finding(name, None, {"tokens": rows},
                                            reason=f"the formula cannot be evaluated ({info})"))
                else:
                    findings.append(Finding(name, False, {"tokens": rows}, info,
                                            f"the paper's {'loss' if part == 'identity' else 'constant'} "
                                            f"differs from the derived one for a {kind} token"))
            else:
                findings.append(Finding(name, True, {"tokens_checked": len(rows),
                                                     "tau_points": len(tau_points(2))}))
    return findings


def _lemma5_report(F, inst: ExactInstance, k: int, a, part: str) -> dict:
    """The disagreement as a function of tau (symbolic), for the counterexample."""
    kind = "prompt" if k < inst.N else "query"
    G, B, c = exact_quadratic(inst)
    Ginv = G.inv()
    vals = _token_values(inst, k, a)
    cval = exact_value(F[f"c_{kind}"], vals)
    if part == "constant":
        derived_min = sympy.cancel(c[k] / 2 - (B[:, k].T * Ginv * B[:, k])[0, 0] / 2)
        return {"instance": inst.as_dict(), "token": k + 1, "kind": kind,
                "paper_c_over_2": str(sympy.factor(cval / 2)),
                "derived_min_L_k": str(sympy.factor(derived_min)),
                "paper_minus_derived": str(sympy.factor(sympy.cancel(cval / 2 - derived_min))),
                "at_tau_1/4": {"paper": _rational_str(_at_tau(cval / 2)),
                               "derived": _rational_str(_at_tau(derived_min))}}
    dval = exact_value(F[f"delta_{kind}"], vals)
    Zsq = exact_value(F["Zbar_sq"], vals)
    derived = sympy.expand((a.T * G * a)[0, 0] / 2 - (a.T * B[:, k])[0, 0] + c[k] / 2)
    paper = (dval.T * Zsq * dval)[0, 0] / 2 + cval / 2
    at0 = {s: 0 for s in a}
    return {"instance": inst.as_dict(), "token": k + 1, "kind": kind,
            "paper_minus_derived": str(sympy.factor(sympy.cancel(sympy.together(sympy.expand(paper) - derived)))),
            "at_Ahat_k_0_tau_1/4": {"paper": _rational_str(_at_tau(paper.subs(at0))),
                                    "derived": _rational_str(_at_tau(derived.subs(at0)))}}


def lemma5_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    insts = exact_instances(ctx)
    findings = [dimension_finding(ctx, [f.name for f in LEMMA5_FORMULAS])]
    findings += _lemma5_exact(F, ctx.formula_texts, insts)
    steps = _loss_steps() + [
        step("Completing the square", r"\mathcal L_k(\hat a) = \tfrac12 (\hat a - A_{:,k})^\top "
             r"\bar Z^2 (\hat a - A_{:,k}) + \mathcal L_k(A_{:,k}),\quad \bar Z^2 = Z^\top Z + m\tau I_N",
             "G = Zbar^2 is read off the Hessian of the derived L_k, b_k from its gradient at 0; "
             "the minimum value is c_k/2 - b_k^T G^{-1} b_k/2."),
        step("Comparison with Lemma 5",
             r"\tfrac12\|\bar Z\delta_k\|_2^2 + \tfrac12 c_k \overset{?}{=} \mathcal L_k(\hat a)",
             "Exact identity in the entries of a and in tau, on rational instances with m < N and "
             "m > N (every token), after a type check of each formula."),
    ]
    return combine(findings, {"instances": [i.as_dict() for i in insts],
                              "derived_prompt_loss": str(token_losses().prompt),
                              "derived_query_loss": str(token_losses().query)}, steps=steps)


# ---------------------------------------------------------------------------------- numeric
def lemma5_paper_loss(F, inst: Instance, Ahat: np.ndarray) -> tuple[float | None, float | None, str]:
    """(paper L(Ahat), paper L*) from (36) with (33) and L*, in float64 (None where a formula
    cannot be evaluated, with the reason)."""
    D = inst.dictionary
    Z, Zhat = D.Z.numpy(), D.Zhat.numpy()
    base = {"Z": Z, "m": inst.m, "N": inst.N, "K": inst.K, "tau": inst.tau}
    reasons = []

    def token_values(k):
        vals = {**base, "z_k": Zhat[:, [k]], "Ahat_k": Ahat[:, [k]]}
        if k < inst.N:
            vals["e_k"] = np.eye(inst.N)[:, [k]]
        return vals

    def kind(k):
        return "prompt" if k < inst.N else "query"

    try:
        cs = [float(np.asarray(float_value(F[f"c_{kind(k)}"], token_values(k))).reshape(-1)[0])
              for k in range(inst.K)]
        lstar = 0.5 * sum(cs) / inst.K
    except Exception as exc:  # numpy refuses the shapes of an ill-typed formula
        cs, lstar = None, None
        reasons.append(f"{type(exc).__name__}: {exc}")
    total = None
    if cs is not None:
        try:
            Zsq = float_value(F["Zbar_sq"], base)
            acc = 0.0
            for k in range(inst.K):
                delta = np.asarray(float_value(F[f"delta_{kind(k)}"], token_values(k))).reshape(-1, 1)
                acc += 0.5 * (delta.T @ Zsq @ delta).item() + 0.5 * cs[k]
            total = acc / inst.K
        except Exception as exc:  # numpy refuses the shapes of an ill-typed formula
            reasons.append(f"{type(exc).__name__}: {exc}")
    return total, lstar, "; ".join(reasons)


def random_model(inst: Instance, gen: torch.Generator, w_scale: float = 0.5) -> SoftmaxICL:
    """A model at a random point: Q_h ~ N(0, 1), w_h ~ N(0, w_scale^2) (not the w = 0 start)."""
    model = SoftmaxICL(SoftmaxConfig(inst.d, inst.K, inst.N, inst.H), generator=gen)
    with torch.no_grad():
        model.w.copy_(w_scale * randn(model.w.shape, generator=gen, dtype=model.w.dtype))
    return model


def _mc_loss(inst: Instance, Ahat: torch.Tensor, law: TaskLaw, samples: int, seed: int,
             model: SoftmaxICL | None = None) -> np.ndarray:
    """Per-task losses (1/2K) sum_k (yhat_k - y_k)^2 with yhat from the torch model (8)."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    done = 0
    D = inst.dictionary
    chunk = max(100, 4_000_000 // (inst.m * inst.K))   # the noise eps is (chunk, m, K)
    while done < samples:
        b = min(chunk, samples - done)
        tasks = sample_tasks(law, D, b, gen)
        with torch.no_grad():
            yhat = model(D.V_all, tasks.prompt_labels) if model is not None else predict(
                tasks.prompt_labels, Ahat)
        out.append((0.5 * ((yhat - tasks.y) ** 2).mean(-1)).numpy())
        done += b
    return np.concatenate(out)


LAWS = {"gaussian": "N(0, 1) entries", "rademacher": "+-1 entries (non-Gaussian, Assumption 1)"}


def _loss_numeric(ctx: Context, paper_loss: Callable) -> TierResult:
    """Derived loss vs Monte Carlo of the torch model, and the paper's loss vs both."""
    inst = make_instance(ctx)
    fq = float_quadratic(inst)
    gen = torch.Generator().manual_seed(ctx.seed_for("model"))
    model = random_model(inst, gen)
    with torch.no_grad():
        Ahat = model.coefficients(inst.dictionary.V_all)
    A_opt = torch.tensor(fq.A)
    points = {"random_theta": (Ahat, model), "optimal_Ahat": (A_opt, None)}
    comparisons = 2 * len(points) * 2
    findings = []
    for pname, (Ah, mdl) in points.items():
        derived = fq.loss(Ah.numpy())
        paper, paper_star, why = paper_loss(ctx.formulas, inst, Ah.numpy())
        for law_name in LAWS:
            law = TaskLaw(inst.tau, dist=law_name)
            samples = _mc_loss(inst, Ah, law, ctx.budget.mc_samples,
                               ctx.seed_for("mc", pname, law_name), mdl)
            targets = {"derived": derived}
            decide = ["derived"]
            if paper is not None:
                targets["paper"] = paper
                decide.append("paper")
            f = _mc_compare(f"{pname}_{law_name}", samples, targets, comparisons, decide,
                            {"lambda_law": LAWS[law_name], "instance": inst.as_dict(),
                             "seed": ctx.seed})
            if paper is None:
                f = Finding(f.name, False if f.ok else f.ok, f.evidence,
                            {"instance": inst.as_dict(), "error": why},
                            f"the paper's loss cannot be evaluated: {why}")
            findings.append(f)
    # L* is the infimum: the derived minimum, the paper's constant
    _, paper_star, why = paper_loss(ctx.formulas, inst, fq.A)
    if paper_star is not None:
        gap = paper_star - fq.L_star
        tol = 1e-9 * max(1.0, abs(fq.L_star))
        ok = abs(gap) <= tol
        findings.append(Finding("L_star_is_the_infimum", ok,
                                {"paper_L_star": paper_star, "derived_min_loss": fq.L_star,
                                 "difference": gap, "tolerance": tol,
                                 "K_minus_N_times_m_tau_over_2K": (inst.K - inst.N) * inst.m * inst.tau
                                 / (2 * inst.K)},
                                None if ok else {"instance": inst.as_dict(), "paper_L_star": paper_star,
                                                 "derived_min_loss": fq.L_star},
                                "" if ok else "the paper's L* is not the minimum of the loss"))
    return combine(findings, {"instance": inst.as_dict(), "derived_L_star": fq.L_star,
                              "theta": "Q_h ~ N(0, 1), w_h ~ N(0, 1/4)", "seed": ctx.seed})


def lemma5_numeric(ctx: Context) -> TierResult:
    return _loss_numeric(ctx, lemma5_paper_loss)


LEMMA5 = Claim(
    id="yang2024.lemma5",
    title="Deterministic form of the population loss (Lemma 5, eq. (36))",
    paper=PAPER,
    statement=(r"Under Assumption 1, $\mathcal L(\theta)=\frac1{2K}\sum_k\|(Z^\top Z+m\tau I)^{1/2}"
               r"\delta_k^\theta\|_2^2+\mathcal L^\star$ with $\delta_k^\theta$ of (33) and "
               r"$\mathcal L^\star=\frac1{2K}\sum_{k\le N}(-(Z^\top z_k+m\tau e_k)^\top(Z^\top Z+"
               r"m\tau I)^{-1}(Z^\top z_k+m\tau e_k)+\|z_k\|^2+m\tau)+\frac1{2K}\sum_{k>N}(-(Z^\top "
               r"z_k)^\top(Z^\top Z+m\tau I)^{-1}Z^\top z_k+\|z_k\|^2)$, a constant."),
    assumptions=("lambda has independent entries, E lambda_i = 0, E lambda_i^2 = 1 (Assumption 1)",
                 "eps_k ~ N(0, tau I_m) i.i.d. (eq. (1)); yhat_k = <y, Ahat_{:,k}> (eq. (8))"),
    formulas=LEMMA5_FORMULAS,
    checks={"symbolic": lemma5_symbolic, "numeric": lemma5_numeric},
    setting=SETTING,
    correction=LEMMA5_CORRECTION,
)


# ==============================================================================================
# Eq. (33): delta_k, the distance of the k-th column of Ahat to the optimum
# ==============================================================================================
# Lemma 5 reads delta_k only through ||Zbar delta_k||^2, but (33) defines it, and its sign enters
# the gradient (45) of the proof of Thm 1: here the negated delta_k is a different definition.
EQ33_FORMULAS = tuple(dataclasses.replace(f, sign_free="", _cache={}) for f in LEMMA5_FORMULAS
                      if f.name in ("delta_prompt", "delta_query"))


def eq33_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    insts = exact_instances(ctx)
    findings = [dimension_finding(ctx, ["delta_prompt", "delta_query"])]
    for kind in ("prompt", "query"):
        rows, bad, undecided = [], None, None
        for inst in insts:
            Astar, _ = exact_optimum(inst)
            a = sympy.Matrix(sympy.symbols(f"a0:{inst.N}"))       # Ahat_k, every entry a symbol
            ones = {x: 1 for x in a}
            ks = range(inst.N) if kind == "prompt" else range(inst.N, inst.K)
            for k in ks:
                delta, why = _safe_exact(F[f"delta_{kind}"], _token_values(inst, k, a))
                if delta is None:
                    undecided = why
                    break
                target = a - sympy.Matrix(delta)        # (33): delta_k = Ahat_k - A_{:,k} for every Ahat_k
                diff = (target - Astar[:, k]).applyfunc(lambda x: sympy.cancel(sympy.together(x)))
                ok = diff == sympy.zeros(inst.N, 1)
                rows.append({"instance": (inst.m, inst.N), "token": k + 1, "agree": ok})
                if not ok and bad is None:
                    i = _first_nonzero(diff)[0]
                    bad = {"instance": inst.as_dict(), "token": k + 1, "entry": i,
                           "paper_Ahat_k_minus_delta_k": str(sympy.factor(target[i])),
                           "derived_minimiser": str(sympy.factor(Astar[i, k])),
                           "at_tau_1/4_Ahat_k_ones": {"paper": _rational_str(_at_tau(target[i].subs(ones))),
                                                      "derived": _rational_str(_at_tau(Astar[i, k]))}}
            if undecided:
                break
        name = f"zero_at_the_minimiser_{kind}"
        if undecided:
            findings.append(Finding(name, None, {"tokens": rows},
                                    reason=f"the formula cannot be evaluated ({undecided})"))
        else:
            findings.append(Finding(name, bad is None, {"tokens": rows}, bad,
                                    "" if bad is None else f"delta_k does not vanish at the derived "
                                                           f"minimiser of L_k ({kind} token)"))
    steps = _loss_steps() + [
        step("Minimiser", r"\nabla_{\hat a}\mathcal L_k = 0 \iff \hat a = A_{:,k}",
             "Solved exactly on rational instances (tau symbolic) from the derived gradient."),
        step("Comparison with (33)", r"\hat a_k - \delta_k^\theta(\hat a_k) \overset{?}{=} A_{:,k}",
             "(33) must be Ahat_k minus the minimiser of L_k, exactly, for a symbolic Ahat_k (so that "
             "L -> L* iff delta_k -> 0 (37))."),
    ]
    return combine(findings, {"instances": [i.as_dict() for i in insts]}, steps=steps)


def eq33_numeric(ctx: Context) -> TierResult:
    F = ctx.formulas
    inst = make_instance(ctx)
    fq = float_quadratic(inst)
    D = inst.dictionary
    worst, bad, why = 0.0, None, ""
    for k in range(inst.K):
        kind = "prompt" if k < inst.N else "query"
        a = ctx.rng("eq33-Ahat", k).standard_normal((inst.N, 1))      # a generic Ahat_k
        vals = {"Z": D.Z.numpy(), "z_k": D.Zhat.numpy()[:, [k]], "Ahat_k": a,
                "m": inst.m, "N": inst.N, "tau": inst.tau, "e_k": np.eye(inst.N)[:, [min(k, inst.N - 1)]]}
        try:
            target = a.reshape(-1) - np.asarray(float_value(F[f"delta_{kind}"], vals)).reshape(-1)
        except Exception as exc:  # an ill-typed formula cannot be evaluated
            why = f"{type(exc).__name__}: {exc}"
            break
        rel = float(np.linalg.norm(target - fq.A[:, k]) / max(np.linalg.norm(fq.A[:, k]), 1e-300))
        if rel > worst:
            worst = rel
            bad = {"token": k + 1, "paper_target": target.tolist(), "derived": fq.A[:, k].tolist()}
    tol = 1e-9
    if why:
        return combine([Finding("target_vs_derived_optimum", False, {"error": why},
                                {"instance": inst.as_dict(), "error": why},
                                f"(33) cannot be evaluated at concrete sizes: {why}")])
    ok = worst <= tol
    return combine([Finding("target_vs_derived_optimum", ok,
                            {"max_relative_error": worst, "tolerance": tol,
                             "why_tolerance": "float64 solves of an N x N system"},
                            None if ok else {"instance": inst.as_dict(), **bad},
                            "" if ok else "delta_k does not vanish at the minimiser")],
                   {"instance": inst.as_dict()})


EQ33 = Claim(
    id="yang2024.eq33",
    title="delta_k of eq. (33): the k-th column of Ahat minus its optimum",
    paper=PAPER,
    statement=(r"$\delta_k^\theta=\sum_h w_{h,k}s_k^h-(Z^\top Z+m\tau I)^{-1}(z_k+m\tau e_k)$ for "
               r"$k\in[N]$ and $\sum_h w_{h,k}s_k^h-(Z^\top Z+m\tau I)^{-1}z_k$ for $k\notin[N]$; "
               r"$\mathcal L\to\mathcal L^\star$ iff $\delta_k\to 0$ (37)."),
    assumptions=("Assumption 1; eq. (1) noise", "Ahat_k = sum_h w_{h,k} s_k^h (eq. (35))"),
    formulas=EQ33_FORMULAS,
    checks={"symbolic": eq33_symbolic, "numeric": eq33_numeric},
    setting=SETTING,
    correction=Correction(
        description="z_k -> Z^T z_k in both cases of (33)",
        reason="(33) adds the m-vector z_k to the N-vector e_k and applies an N x N inverse to "
               "an m-vector; (78), (79) and L* use Z^T z_k",
        formulas={k: v for k, v in LEMMA5_CORRECTION.formulas.items() if k.startswith("delta")}),
)

# ==============================================================================================
# Eq. (34) and (66): the optimal Ahat
# ==============================================================================================
EQ34_FORMULAS = (
    NamedFormula("A", A_TEXT, (_m, _N, _K, _tau, _Z, _Zhat, _J), equation="(34)", shape=("N", "K"),
                 description="A = (Z^T Z + m tau I_N)^{-1}(Z^T Zhat + (m tau I_N, 0))"),
    NamedFormula("A_woodbury", "J + Z.T*Inverse(m*tau*Identity(m) + Z*Z.T)*(Zhat - Z*J)",
                 (_m, _N, _K, _tau, _Z, _Zhat, _J), equation="(66)", shape=("N", "K"),
                 description="A = (I_N, Z^T (m tau I_m + Z Z^T)^{-1} Z^Q), with (0, Z^Q) = Zhat - Z J"),
)


def _exact_matrix_values(inst: ExactInstance) -> dict:
    return {"Z": inst.Z, "Zhat": inst.Zhat, "J": inst.J, **_sizes_scalars(inst.m, inst.N, inst.K)}


def _compare_exact_matrix(name: str, paper, derived: sympy.Matrix, inst: ExactInstance,
                          what: str) -> Finding | None:
    diff = (sympy.Matrix(paper) - derived).applyfunc(lambda x: sympy.cancel(sympy.together(x)))
    where = _first_nonzero(diff)
    if where is None:
        return None
    i, j = where
    return Finding(name, False, {}, {
        "instance": inst.as_dict(), "entry": [i, j], "paper": str(sympy.factor(sympy.Matrix(paper)[i, j])),
        "derived": str(sympy.factor(derived[i, j])),
        "at_tau_1/4": {"paper": _rational_str(_at_tau(sympy.Matrix(paper)[i, j])),
                       "derived": _rational_str(_at_tau(derived[i, j]))}},
        f"{what} differs from the derived optimum at entry {(i, j)}")


def eq34_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    insts = exact_instances(ctx)
    findings = [dimension_finding(ctx, ["A", "A_woodbury"])]
    for name, what in (("A", "(34)"), ("A_woodbury", "(66)")):
        fail, undecided = None, ""
        for inst in insts:
            Astar, _ = exact_optimum(inst)
            val, why = _safe_exact(F[name], _exact_matrix_values(inst))
            if val is None:
                undecided = why
                break
            fail = _compare_exact_matrix(f"{name}_vs_derived", val, Astar, inst, what)
            if fail:
                break
        if undecided:
            findings.append(Finding(f"{name}_vs_derived", None, reason=f"cannot evaluate: {undecided}"))
        else:
            findings.append(fail or Finding(f"{name}_vs_derived", True,
                                            {"instances": len(insts), "exact": True}))
    steps = _loss_steps() + [
        step("Optimum", r"A_{:,k} = \big(Z^\top Z + m\tau I_N\big)^{-1} b_k,\ "
             r"b_k = -\nabla\mathcal L_k(0)",
             "The columns of the derived minimiser, exactly on rational instances (tau symbolic)."),
        step("Comparison", r"A \overset{?}{=} (34),\qquad A \overset{?}{=} (66)",
             "Entrywise as rational functions of tau."),
    ]
    return combine(findings, {"instances": [i.as_dict() for i in insts]}, steps=steps)


def _float_matrix_values(inst: Instance) -> dict:
    D = inst.dictionary
    J = np.zeros((inst.N, inst.K))
    J[:, :inst.N] = np.eye(inst.N)
    return {"Z": D.Z.numpy(), "Zhat": D.Zhat.numpy(), "J": J, "m": inst.m, "N": inst.N,
            "K": inst.K, "tau": inst.tau}


def eq34_numeric(ctx: Context) -> TierResult:
    F = ctx.formulas
    findings = []
    insts = [make_instance(ctx), make_instance(ctx, "paper-size", BUDGET_SIZES["paper"],
                                               BUDGET_TAU["paper"])]
    tol = 1e-8
    for name in ("A", "A_woodbury"):
        rows, bad = [], None
        for inst in insts:
            fq = float_quadratic(inst)
            try:
                val = np.asarray(float_value(F[name], _float_matrix_values(inst)))
            except Exception as exc:  # ill-typed
                bad = {"instance": inst.as_dict(), "error": f"{type(exc).__name__}: {exc}"}
                break
            rel = float(np.linalg.norm(val - fq.A) / np.linalg.norm(fq.A))
            rows.append({"sizes": dict(inst.sizes), "tau": inst.tau, "relative_error": rel})
            if rel > tol and bad is None:
                i, j = np.unravel_index(np.abs(val - fq.A).argmax(), val.shape)
                bad = {"instance": inst.as_dict(), "entry": [int(i), int(j)], "paper": float(val[i, j]),
                       "derived": float(fq.A[i, j]), "relative_error": rel}
        ok = bad is None
        findings.append(Finding(f"{name}_float", ok, {"instances": rows, "tolerance": tol,
                                                      "why_tolerance": "float64 solves, condition "
                                                                       "number of Z^T Z + m tau I"},
                                bad, "" if ok else f"{name} differs from the derived optimum"))
    return combine(findings)


EQ34 = Claim(
    id="yang2024.eq34",
    title="The optimal Ahat: A of eq. (34) and its form (66)",
    paper=PAPER,
    statement=(r"The loss is minimised by $\hat A=A=(Z^\top Z+m\tau I_N)^{-1}(Z^\top\hat Z+(m\tau I_N,0))"
               r"\in\mathbb R^{N\times K}$, and (66) $A=(I_N, Z^\top(m\tau I_m+ZZ^\top)^{-1}Z^Q)$."),
    assumptions=("Assumption 1; eq. (1) noise",),
    formulas=EQ34_FORMULAS,
    checks={"symbolic": eq34_symbolic, "numeric": eq34_numeric},
    setting=SETTING,
)

# ==============================================================================================
# Eq. (36) in matrix form: L = (1/2K) ||Zbar (Ahat - A)||_F^2 + L*
# ==============================================================================================
EQ36_FORMULAS = (
    NamedFormula("L_excess", f"trace((Ahat - {A_TEXT}).T*{G_TEXT}*(Ahat - {A_TEXT}))/(2*K)",
                 (_m, _N, _K, _tau, _Z, _Zhat, _J, _Ahat), equation="(36), (70)",
                 description="(1/2K) sum_k ||Zbar delta_k||^2 = (1/2K) ||Zbar (Ahat - A)||_F^2"),
    NamedFormula("L_star", f"(-trace((Z.T*Zhat + m*tau*J).T*Inverse{G_TEXT}*(Z.T*Zhat + m*tau*J)) "
                           "+ trace(Zhat.T*Zhat) + N*m*tau)/(2*K)",
                 (_m, _N, _K, _tau, _Z, _Zhat, _J), equation="L* of Lemma 5 (matrix form)",
                 description="the two sums of L*: sum_k -b_k^T G^{-1} b_k + ||z_k||^2, plus m tau "
                             "for each of the N prompt tokens"),
)


def eq36_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    insts = exact_instances(ctx)
    findings = [dimension_finding(ctx, ["L_excess", "L_star"])]
    fail, undecided, rows = None, "", []
    for inst in insts:
        Ah = sympy.Matrix(inst.N, inst.K, lambda i, j: sympy.Symbol(f"a_{i}_{j}"))
        agree = True
        for tau in tau_points(inst.N):
            G, B, c = exact_quadratic(inst, tau)
            derived = sum(((Ah[:, k].T * G * Ah[:, k])[0, 0] / 2 - (Ah[:, k].T * B[:, k])[0, 0] + c[k] / 2)
                          for k in range(inst.K)) / inst.K
            vals = {**_exact_matrix_values(inst), "Ahat": Ah, "tau": tau}
            ex, why1 = _safe_exact(F["L_excess"], vals)
            ls, why2 = _safe_exact(F["L_star"], vals)
            if ex is None or ls is None:
                undecided = why1 or why2
                break
            diff = sympy.expand(ex + ls - derived)
            if diff != 0:
                zero = {s: 0 for s in Ah}
                fail = {"instance": inst.as_dict(), "tau": str(tau),
                        "paper_minus_derived": str(sympy.factor(diff)),
                        "at_Ahat_0": {"paper": _rational_str((ex + ls).subs(zero)),
                                      "derived": _rational_str(derived.subs(zero))}}
                agree = False
                break
        rows.append({"instance": (inst.m, inst.N), "agree": agree if not undecided else None})
        if fail or undecided:
            break
    if undecided:
        findings.append(Finding("loss_identity", None, {"instances": rows},
                                reason=f"cannot evaluate: {undecided}"))
    else:
        findings.append(Finding("loss_identity", fail is None, {"instances": rows,
                                                                "tau_points": "N + 4 rational values"}, fail,
                                "" if fail is None else "L_excess + L_star differs from the derived "
                                                        "population loss"))
    steps = _loss_steps() + [
        step("Total loss", r"\mathcal L(\hat A) = \frac1K\sum_{k=1}^K \mathcal L_k(\hat a_k)",
             "eq. (9): the average over the K tokens, with a symbolic Ahat (every entry a symbol)."),
        step("Comparison", r"\mathcal L(\hat A) \overset{?}{=} \frac1{2K}\|\bar Z(\hat A - A)\|_F^2 "
             r"+ \mathcal L^\star", "Exact identity in the entries of Ahat, at N + 4 rational noise levels "
             "(which decides it as rational functions of tau)."),
    ]
    return combine(findings, {"instances": [i.as_dict() for i in insts]}, steps=steps)


def eq36_paper_loss(F, inst: Instance, Ahat: np.ndarray) -> tuple[float | None, float | None, str]:
    vals = {**_float_matrix_values(inst), "Ahat": Ahat}
    try:
        ls = float(np.asarray(float_value(F["L_star"], vals)).reshape(-1)[0])
    except Exception as exc:  # ill-typed
        return None, None, f"{type(exc).__name__}: {exc}"
    try:
        ex = float(np.asarray(float_value(F["L_excess"], vals)).reshape(-1)[0])
    except Exception as exc:  # ill-typed
        return None, ls, f"{type(exc).__name__}: {exc}"
    return ex + ls, ls, ""


def eq36_numeric(ctx: Context) -> TierResult:
    return _loss_numeric(ctx, eq36_paper_loss)


EQ36 = Claim(
    id="yang2024.eq36",
    title="The loss as a distance to A: L = (1/2K)||Zbar(Ahat - A)||_F^2 + L* (eqs. (36), (70))",
    paper=PAPER,
    statement=(r"$\mathcal L(\theta)=\frac1{2K}\sum_k\|\bar Z\delta_k^\theta\|_2^2+\mathcal L^\star"
               r"=\frac1{2K}\|\bar Z(\hat A-A)\|_F^2+\mathcal L^\star$ with $\mathcal L^\star$ of "
               r"Lemma 5."),
    assumptions=("Assumption 1; eq. (1) noise",),
    formulas=EQ36_FORMULAS,
    checks={"symbolic": eq36_symbolic, "numeric": eq36_numeric},
    setting=SETTING,
    correction=Correction(
        description="L*: m tau for every one of the K tokens (K m tau), not only the N prompt tokens",
        reason="the label of a query token carries noise lambda^T eps_k of variance m tau that no "
               "prediction can remove (eq. (77) with k > N)",
        formulas={"L_star": f"(-trace((Z.T*Zhat + m*tau*J).T*Inverse{G_TEXT}*(Z.T*Zhat + m*tau*J)) "
                            "+ trace(Zhat.T*Zhat) + K*m*tau)/(2*K)"}),
)


# ==============================================================================================
# Eqs. (8) and (35): the multi-head attention (5)-(7) predicts yhat = Ahat^T y
# ==============================================================================================
_Ck = FormulaSymbol("C_k", "matrix", ("N", "H"))
_omk = FormulaSymbol("omega_k", "matrix", ("H", "1"))

EQ8_FORMULAS = (
    NamedFormula("yhat_k", "y.T*C_k*omega_k", (_N, _H, _y, _Ck, _omk), equation="(8)", shape=("1", "1"),
                 description="yhat_k = <y, sum_h w_{h,k} softmax(V^T Q_h v_k)>, the sum over heads "
                             "written as C_k omega_k"),
)
EQ35_FORMULAS = (
    NamedFormula("yhat", "Transpose(Ahat)*y", (_N, _K, _y, _Ahat), equation="(35), (70)",
                 shape=("K", "1"), description="yhat = Ahat(theta)^T y with Ahat of eq. (35)"),
)


def _is_zero_expr(x) -> bool:
    """Exact zero test; a non-zero value at a random rational point settles it quickly."""
    x = sympy.expand(x)
    if x == 0:
        return True
    syms = sorted(x.free_symbols, key=str)
    for seed in (1, 2):
        point = {s: sympy.Rational((7 * i + 3 * seed) % 11 - 5, 3 + (i + seed) % 4) for i, s in enumerate(syms)}
        if abs(sympy.N(x.subs(point), 30)) > 1e-20:
            return False
    return sympy.simplify(x) == 0


def _symbolic_architecture(d=2, N=2, K=3, H=2):
    V = sympy.Matrix(d, K, lambda i, j: sympy.Symbol(f"v_{i}{j}"))
    Q = [sympy.Matrix(d, d, lambda i, j, h=h: sympy.Symbol(f"q{h}_{i}{j}")) for h in range(H)]
    w = sympy.Matrix(H, K, lambda i, j: sympy.Symbol(f"w_{i}{j}"))
    y = sympy.Matrix(N, 1, lambda i, j: sympy.Symbol(f"y_{i}"))
    return V, Q, w, y


def _prediction_symbolic(ctx: Context, which: str) -> TierResult:
    F = ctx.formulas
    d, N, K, H = 2, 2, 3, 2
    V, Q, w, y = _symbolic_architecture(d, N, K, H)
    full = full_prediction(V, y, N, Q, w)                      # diag T(E), eqs. (5)-(7)
    S = attention_weights(V[:, :N], V, Q)                      # s_k^h, eq. (28)
    names = ["yhat_k"] if which == "eq8" else ["yhat"]
    findings = [dimension_finding(ctx, names)]
    rows, bad, why = [], None, ""
    if which == "eq8":
        for k in range(K):
            vals = {"y": y, "C_k": head_matrix(S, k), "omega_k": w[:, k], "N": N, "H": H}
            val, why = _safe_exact(F["yhat_k"], vals)
            if val is None:
                break
            ok = _is_zero_expr(val - full[k])
            rows.append({"token": k + 1, "agree": ok})
            if not ok and bad is None:
                bad = {"token": k + 1, "sizes": {"d": d, "N": N, "K": K, "H": H},
                       "paper": str(val), "architecture": str(full[k])}
    else:
        Ahat = coefficient_matrix(S, w)                         # eq. (35)
        val, why = _safe_exact(F["yhat"], {"y": y, "Ahat": Ahat, "N": N, "K": K})
        if val is not None:
            val = sympy.Matrix(val) if isinstance(val, sympy.MatrixBase) else sympy.Matrix([val])
            for k in range(K):
                ok = val.shape == (K, 1) and _is_zero_expr(val[k] - full[k])
                rows.append({"token": k + 1, "agree": ok})
                if not ok and bad is None:
                    bad = {"token": k + 1, "paper": str(val[k] if k < val.shape[0] else None),
                           "architecture": str(full[k])}
    if why and val is None:
        findings.append(Finding("architecture_identity", None, reason=f"cannot evaluate: {why}"))
    else:
        findings.append(Finding("architecture_identity", bad is None, {"tokens": rows,
                                "sizes": {"d": d, "N": N, "K": K, "H": H}}, bad,
                                "" if bad is None else "the formula differs from the diagonal of T(E)"))
    steps = [
        step("Embedding", r"E = \begin{pmatrix} v_1 & \cdots & v_N & v_{N+1} & \cdots & v_K\\ "
             r"y_1 & \cdots & y_N & 0 & \cdots & 0\end{pmatrix},\ E^P = E_{:,1:N}", "eqs. (2), (4)."),
        step("Heads", r"\mathrm{head}_h(E) = W^V_h E^P\,\mathrm{softmax}\big((E^P)^\top (W^K_h)^\top "
             r"W^Q_h E\big),\quad \mathcal T(E) = W^O[\mathrm{head}_1;\dots;\mathrm{head}_H]",
             "eqs. (5)-(6), with W^O = (I_K, ..., I_K), W^V_h = (0, w_h), W^K_h = I, "
             "W^Q_h = diag(Q_h, 0) (eq. (7)); all entries independent symbols (d = 2, N = 2, K = 3, "
             "H = 2)."),
        step("Prediction", r"\hat y_k = \mathcal T(E)_{kk}",
             "The diagonal, expanded exactly and compared with the formula evaluated at "
             "C_k = (s_k^1, ..., s_k^H), s_k^h = softmax(V^T Q_h v_k) (eqs. (13), (28))."),
    ]
    return combine(findings, steps=steps)


def _prediction_numeric(ctx: Context, which: str) -> TierResult:
    F = ctx.formulas
    inst = make_instance(ctx)
    gen = torch.Generator().manual_seed(ctx.seed_for("model"))
    worst, bad, why = 0.0, None, ""
    trials = 5
    for trial in range(trials):
        model = random_model(inst, gen, w_scale=1.0)
        Q, w = model.Q.detach(), model.w.detach()
        V_all = inst.dictionary.V_all
        y = randn(inst.N, generator=gen, dtype=torch.float64)
        full = full_prediction(V_all, y, inst.N, Q, w).numpy()
        S = attention_weights(V_all[:, :inst.N], V_all, Q)
        try:
            if which == "eq8":
                paper = np.array([np.asarray(float_value(F["yhat_k"], {
                    "y": y.numpy()[:, None], "C_k": head_matrix(S, k).numpy(),
                    "omega_k": w[:, [k]].numpy(), "N": inst.N, "H": inst.H})).reshape(-1)[0]
                    for k in range(inst.K)])
            else:
                paper = np.asarray(float_value(F["yhat"], {
                    "y": y.numpy()[:, None], "Ahat": coefficient_matrix(S, w).numpy(),
                    "N": inst.N, "K": inst.K})).reshape(-1)
                if paper.shape != full.shape:
                    raise ValueError(f"the formula has {paper.size} entries, the model {full.size}")
        except Exception as exc:  # an ill-typed formula
            why = f"{type(exc).__name__}: {exc}"
            break
        rel = float(np.abs(paper - full).max() / np.abs(full).max())
        if rel > worst:
            worst = rel
            k = int(np.abs(paper - full).argmax())
            bad = {"trial": trial, "token": k + 1, "paper": float(paper[k]), "architecture": float(full[k])}
    tol = 1e-12
    if why:
        return combine([Finding("architecture_float", False, {"error": why},
                                {"instance": inst.as_dict(), "error": why}, f"cannot evaluate: {why}")])
    ok = worst <= tol
    return combine([Finding("architecture_float", ok, {
        "max_relative_difference": worst, "tolerance": tol, "trials": trials,
        "why_tolerance": "float64 rounding of a softmax and a K x K product"},
        None if ok else {"instance": inst.as_dict(), **bad, "seed": ctx.seed},
        "" if ok else "the formula differs from the diagonal of T(E)")], {"instance": inst.as_dict()})


EQ8 = Claim(
    id="yang2024.eq8",
    title="The multi-head attention (5)-(7) predicts yhat_k = <y, sum_h w_hk softmax(V^T Q_h v_k)>",
    paper=PAPER,
    statement=(r"With the weights (7), the diagonal of $\mathcal T(E)$ (eqs. (5)-(6)) is "
               r"$\hat y_k=\langle y,\sum_{h=1}^H w_{h,k}\,\mathrm{softmax}(V^\top Q_h v_k)\rangle$."),
    assumptions=("W^O = (I_K, ..., I_K), W^V_h = (0, w_h), (W^K_h)^T W^Q_h = diag(Q_h, 0) (eq. (7))",),
    formulas=EQ8_FORMULAS,
    checks={"symbolic": lambda ctx: _prediction_symbolic(ctx, "eq8"),
            "numeric": lambda ctx: _prediction_numeric(ctx, "eq8")},
    setting=SETTING,
)

EQ35 = Claim(
    id="yang2024.eq35",
    title="Ahat(theta) of eq. (35): the model is the linear map yhat = Ahat(theta)^T y",
    paper=PAPER,
    statement=(r"$\hat A(\theta)=(\sum_h w_{h,1}s_1^h,\dots,\sum_h w_{h,K}s_K^h)\in\mathbb R^{N\times K}$ "
               r"and $\hat y=\hat A(\theta)^\top y$ (used in (70) and (75))."),
    assumptions=("the weights of eq. (7)",),
    formulas=EQ35_FORMULAS,
    checks={"symbolic": lambda ctx: _prediction_symbolic(ctx, "eq35"),
            "numeric": lambda ctx: _prediction_numeric(ctx, "eq35")},
    setting=SETTING,
)

# ==============================================================================================
# Lemma 1: the softmax gradient (29)
# ==============================================================================================
_sjk = FormulaSymbol("s_jk")
_vj = FormulaSymbol("v_j", "matrix", ("d", "1"))
_V = FormulaSymbol("V", "matrix", ("d", "N"))
_sk = FormulaSymbol("s_k", "matrix", ("N", "1"))
_vk = FormulaSymbol("v_k", "matrix", ("d", "1"))

LEMMA1_FORMULAS = (
    NamedFormula("ds_dQ", "s_jk*(v_j*OneMatrix(1, N) - V)*s_k*v_k.T",
                 (_d, _N, _sjk, _vj, _V, _sk, _vk), equation="(29)", shape=("d", "d"),
                 description="d s_jk^h / d Q_h = s_jk^h sum_i s_ik^h (v_j - v_i) v_k^T, the sum "
                             "written as (v_j 1^T - V) s_k"),
)


def lemma1_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    d, N = 2, 3
    V = sympy.Matrix(d, N, lambda i, j: sympy.Symbol(f"v_{i}{j}"))
    vk = sympy.Matrix(sympy.symbols(f"u0:{d}"))
    Qs = sympy.Matrix(d, d, lambda i, j: sympy.Symbol(f"q_{i}{j}"))
    s = softmax_columns(V.T * Qs * vk)                     # s_k = softmax(V^T Q v_k)
    findings = [dimension_finding(ctx, ["ds_dQ"])]
    rows, bad, why = [], None, ""
    for j in range(N):
        derived = sympy.Matrix(d, d, lambda a, b: sympy.diff(s[j], Qs[a, b]))
        val, why = _safe_exact(F["ds_dQ"], {"s_jk": s[j], "v_j": V[:, j], "V": V, "s_k": s,
                                            "v_k": vk, "N": N, "d": d})
        if val is None:
            break
        diff = (sympy.Matrix(val) - derived)
        ok = all(_is_zero_expr(sympy.together(x)) for x in diff)
        rows.append({"j": j + 1, "agree": ok})
        if not ok and bad is None:
            bad = {"j": j + 1, "sizes": {"d": d, "N": N}, "paper_entry_00": str(sympy.simplify(val[0, 0])),
                   "derived_entry_00": str(sympy.simplify(derived[0, 0]))}
    if val is None:
        findings.append(Finding("derivative_identity", None, reason=f"cannot evaluate: {why}"))
    else:
        findings.append(Finding("derivative_identity", bad is None, {"entries": rows}, bad,
                                "" if bad is None else "(29) differs from the derivative of the softmax"))
    steps = [step("Softmax", r"s_{jk} = \frac{e^{v_j^\top Q v_k}}{\sum_i e^{v_i^\top Q v_k}}",
                  "Symbolic V (2 x 3), v_k and Q (2 x 2)."),
             step("Derivative", r"\frac{\partial s_{jk}}{\partial Q_{ab}}",
                  "sympy's derivative of every entry, compared exactly with (29).")]
    return combine(findings, steps=steps)


def lemma1_numeric(ctx: Context) -> TierResult:
    F = ctx.formulas
    inst = make_instance(ctx)
    gen = torch.Generator().manual_seed(ctx.seed_for("lemma1"))
    D = inst.dictionary
    V = D.V
    worst, bad, why = 0.0, None, ""
    for trial in range(3):
        Q = 1.5 * randn(inst.d, inst.d, generator=gen, dtype=torch.float64)
        for k in range(min(inst.K, 12)):      # a sample of tokens keeps the paper budget cheap
            vk = D.V_all[:, k]
            jac = torch.autograd.functional.jacobian(
                lambda q: torch.softmax(V.T @ q @ vk, 0), Q)          # (N, d, d)
            s = torch.softmax(V.T @ Q @ vk, 0)
            for j in range(min(inst.N, 8)):
                try:
                    paper = np.asarray(float_value(F["ds_dQ"], {
                        "s_jk": float(s[j]), "v_j": V[:, [j]].numpy(), "V": V.numpy(),
                        "s_k": s[:, None].numpy(), "v_k": vk[:, None].numpy(), "N": inst.N, "d": inst.d}))
                except Exception as exc:  # ill-typed
                    why = f"{type(exc).__name__}: {exc}"
                    break
                ref = jac[j].numpy()
                rel = float(np.abs(paper - ref).max() / max(np.abs(ref).max(), 1e-300))
                if rel > worst:
                    worst, bad = rel, {"trial": trial, "k": k + 1, "j": j + 1,
                                       "paper": paper.tolist(), "autograd": ref.tolist()}
    tol = 1e-10
    if why:
        return combine([Finding("autograd", False, {"error": why}, {"error": why}, why)])
    ok = worst <= tol
    return combine([Finding("autograd", ok, {"max_relative_difference": worst, "tolerance": tol,
                                             "why_tolerance": "float64 autograd of a softmax"},
                            None if ok else {"instance": inst.as_dict(), **bad},
                            "" if ok else "(29) differs from autograd")], {"instance": inst.as_dict()})


LEMMA1 = Claim(
    id="yang2024.lemma1",
    title="Softmax gradient (Lemma 1, eq. (29))",
    paper=PAPER,
    statement=r"$\partial s^h_{jk}/\partial Q_h=s^h_{jk}\sum_{i=1}^N s^h_{ik}(v_j-v_i)v_k^\top$.",
    assumptions=("s_k^h = softmax(V^T Q_h v_k) (eq. (28))",),
    formulas=LEMMA1_FORMULAS,
    checks={"symbolic": lemma1_symbolic, "numeric": lemma1_numeric},
    setting=SETTING,
)

# ==============================================================================================
# Lemma 2: smoothness of softmax (30)
# ==============================================================================================
@lru_cache(maxsize=1)
def lemma2_sharpness_limit() -> sympy.Expr:
    """lim_{t -> 0+} ||softmax(t, -t) - softmax(0, 0)||_1 / t (l = 2, xi_2 = 0): 1, so no C below 1
    holds; with the bound C = 1 of ``lemma2_symbolic``'s derivation it is the least constant."""
    t = sympy.Symbol("t", positive=True)
    s2 = softmax_columns(sympy.Matrix([t, -t]))
    ratio = (abs(s2[0] - sympy.Rational(1, 2)) + abs(s2[1] - sympy.Rational(1, 2))) / t
    return sympy.limit(ratio.rewrite(sympy.exp), t, 0, "+")


LEMMA2_FORMULAS = (
    NamedFormula("C", "2", (), equation="(30)", weaker="larger",
                 description="||softmax(xi_1) - softmax(xi_2)||_1 <= C ||xi_1 - xi_2||_inf",
                 sharp=lemma2_sharpness_limit),
)


def lemma2_symbolic(ctx: Context) -> TierResult:
    C = sympy.sympify(ctx.formulas["C"])
    l = 3
    u = sympy.symbols(f"u0:{l}")
    s = softmax_columns(sympy.Matrix(u))
    Jac = sympy.Matrix(l, l, lambda i, j: sympy.diff(s[i], u[j]))
    J_form = sympy.diag(*s) - s * s.T
    jac_ok = all(_is_zero_expr(sympy.together(x)) for x in (Jac - J_form))
    # ||J x||_1 = sum_i s_i |x_i - sbar| <= sqrt(sum_i s_i (x_i - sbar)^2) = sqrt(sum s_i x_i^2 - sbar^2)
    p = sympy.symbols(f"p0:{l}", nonnegative=True)
    x = sympy.symbols(f"x0:{l}", real=True)
    sbar = sum(pi * xi for pi, xi in zip(p, x))
    var = sum(pi * (xi - sbar) ** 2 for pi, xi in zip(p, x))
    var_id = sympy.expand((var - (sum(pi * xi ** 2 for pi, xi in zip(p, x)) - sbar ** 2)).subs(
        p[-1], 1 - sum(p[:-1])))
    sharp = lemma2_sharpness_limit()  # l = 2, xi_1 = (t, -t), xi_2 = 0: ratio -> 1 as t -> 0
    derived_C = sympy.Integer(1)
    ok_proof = jac_ok and var_id == 0 and sharp == derived_C
    findings = [Finding("sharp_constant", ok_proof, {
        "jacobian_is_diag_s_minus_ssT": jac_ok, "variance_identity": var_id == 0,
        "limit_ratio_l2": str(sharp), "derived_sharp_constant": 1},
        reason="" if ok_proof else "the derivation of the sharp constant failed")]
    ok = bool(C >= derived_C)
    findings.append(Finding("paper_constant_is_an_upper_bound", ok,
                            {"paper_C": str(C), "sharp_C": 1, "slack": str(C - derived_C)},
                            None if ok else {"paper_C": str(C), "sharp_C": 1,
                                             "pair": "xi_1 = (t, -t), xi_2 = 0, t -> 0: ratio -> 1"},
                            "" if ok else f"C = {C} is below the supremum 1 of the ratio",
                            _lemma2_margin(derived_C, C, {"sup_over": "xi_1 = (t, -t), xi_2 = 0, "
                                                                      "t -> 0"})))
    steps = [
        step("Jacobian", r"\frac{\partial\,\mathrm{softmax}(u)}{\partial u} = \mathrm{diag}(s) - ss^\top",
             "sympy's derivative (l = 3)."),
        step("Bound", r"\|Jx\|_1 = \sum_i s_i|x_i-\bar s| \le \Big(\sum_i s_i (x_i-\bar s)^2\Big)^{1/2}"
             r" = \Big(\sum_i s_i x_i^2 - \bar s^2\Big)^{1/2} \le \|x\|_\infty,\ \bar s=\sum_i s_i x_i",
             "Cauchy-Schwarz with weights s (sum s_i = 1); the variance identity is checked by sympy. "
             "With the mean value theorem along the segment, the constant is 1."),
        step("Sharpness", r"\lim_{t\to0}\frac{\|\mathrm{softmax}(t,-t)-\mathrm{softmax}(0,0)\|_1}{t} = 1",
             "so 1 is the least constant; the paper's C must be >= 1."),
    ]
    return combine(findings, steps=steps)


def lemma2_numeric(ctx: Context) -> TierResult:
    C = float(sympy.sympify(ctx.formulas["C"]))
    gen = torch.Generator().manual_seed(ctx.seed_for("lemma2"))
    best, best_pair = 0.0, None
    rows = []
    for l in (2, 3, 5, 8):
        x1 = randn(128, l, generator=gen, dtype=torch.float64) * 3
        x2 = x1 + randn(128, l, generator=gen, dtype=torch.float64) * 0.1
        x1.requires_grad_(True)
        x2.requires_grad_(True)
        opt = torch.optim.Adam([x1, x2], lr=0.02)
        for _ in range(100):  # adversarial: maximise the ratio
            opt.zero_grad()
            num = (torch.softmax(x1, -1) - torch.softmax(x2, -1)).abs().sum(-1)
            den = (x1 - x2).abs().max(-1).values + 1e-12
            (-(num / den).sum()).backward()
            opt.step()
        with torch.no_grad():
            num = (torch.softmax(x1, -1) - torch.softmax(x2, -1)).abs().sum(-1)
            den = (x1 - x2).abs().max(-1).values
            r = (num / den)
            i = int(r.argmax())
            rows.append({"l": l, "max_ratio": float(r[i])})
            if float(r[i]) > best:
                best = float(r[i])
                best_pair = {"xi_1": x1[i].tolist(), "xi_2": x2[i].tolist(), "ratio": best}
    ok = best <= C
    return combine([Finding("adversarial_ratio", ok, {
        "max_ratio": best, "paper_C": C, "per_length": rows,
        "search": "Adam ascent on ||softmax(xi_1) - softmax(xi_2)||_1 / ||xi_1 - xi_2||_inf from "
                  "128 random pairs per length"},
        None if ok else {"pair": best_pair, "paper_C": C, "seed": ctx.seed},
        "" if ok else f"a pair has ratio {best:.4f} > C = {C}",
        _lemma2_margin(best, C, {"l": max(rows, key=lambda r: r["max_ratio"])["l"]}),
        # Adam's best ratio is a lower bound on the supremum, not the supremum: a pass here is
        # "no counterexample found" (the symbolic tier derives the sharp constant 1)
        search=True)])


def _lemma2_margin(ratio, C, at: dict) -> Margin | None:
    """||softmax(xi_1) - softmax(xi_2)||_1 / ||xi_1 - xi_2||_inf over C, as a margin."""
    near = Closest("||softmax(xi_1) - softmax(xi_2)||_1 / ||xi_1 - xi_2||_inf over C")
    near.see_le(ratio, C, at)
    return near.margin


def _worst_margin(measure: str, used, at: Mapping | None) -> Margin | None:
    """A search's largest ratio measured / allowed as a margin (None where it is not a number)."""
    near = Closest(measure)
    near.see(used, dict(at or {}))
    return near.margin


def _proof_margin(ratio: sympy.Expr, rng: np.random.Generator, smallest: dict | None = None,
                  admits: "Admits | None" = None) -> Margin | None:
    """How near a printed bound comes to the bound its proof gives: ratio = printed / proof, and
    the margin is proof / printed at the smallest ratio (exact when the ratio is a constant, else
    the smallest of _smallest_ratio's probes, or ``smallest`` where the caller has it)."""
    measure = "the proof's bound over the printed bound"
    ratio = _simplified(ratio)
    if not ratio.free_symbols:
        value = sympy.N(ratio, 30)
        return _worst_margin(measure, 1 / value, {}) if value.is_positive else None
    found = smallest if smallest is not None else _smallest_ratio(ratio, rng, admits=admits)
    low = found.get("ratio_float")
    return _worst_margin(measure, 1 / low, found.get("at")) if low and low > 0 else None


LEMMA2 = Claim(
    id="yang2024.lemma2",
    title="Smoothness of softmax (Lemma 2, eq. (30))",
    paper=PAPER,
    statement=r"$\|\mathrm{softmax}(\xi_1)-\mathrm{softmax}(\xi_2)\|_1\le 2\|\xi_1-\xi_2\|_\infty$.",
    assumptions=("xi_1, xi_2 in R^l, any l",),
    formulas=LEMMA2_FORMULAS,
    checks={"symbolic": lemma2_symbolic, "numeric": small_threads(lemma2_numeric)},
    setting=SETTING,
)

# ==============================================================================================
# Lemma 4: the equivalence of the regressions (24) and (25), eq. (32)
# ==============================================================================================
_lam = FormulaSymbol("lam", "matrix", ("m", "1"))
LEMMA4_FORMULAS = (
    NamedFormula("rhs", "(y - Z.T*lam).T*(y - Z.T*lam)/(2*N) + tau/2*lam.T*lam",
                 (_m, _N, _tau, _y, _Z, _lam), equation="(32)", shape=("1", "1"),
                 description="(1/2N) sum_i (y_i - lambda^T f(v_i))^2 + (tau/2)||lambda||^2"),
)


@lru_cache(maxsize=None)
def _lemma4_derived() -> Poly:
    """E_eps[(1/2N) sum_i (y_i - lambda^T(f(v_i) + eps_i))^2] with y, lambda fixed."""
    Ep = gaussian_matrix("Eps", "m", "N", latex="\\varepsilon/\\sqrt{\\tau}")
    Z = matrix("Z", "m", "N")
    lam = vector("lam", "m")
    y = vector("y", "N")
    r = y - (Z + Ep * sympy.sqrt(TAU_SYM)).T @ lam
    return expectation(r.T @ r).scale(1 / (2 * SIZE["N"])).simplify()


def _ridge_minimiser(reg) -> tuple[Poly, Poly]:
    """The objective (1/2N)||y - Z^T lambda||^2 + (reg/2)||lambda||^2 and its gradient in lambda."""
    Z = matrix("Z", "m", "N")
    lam = vector("lam", "m")
    y = vector("y", "N")
    r = y - Z.T @ lam
    obj = (canonical(r.T @ r).scale(1 / (2 * SIZE["N"])) + canonical(lam.T @ lam).scale(reg / 2)).simplify()
    return obj, obj.diff("lam").simplify()


def lemma4_symbolic(ctx: Context) -> TierResult:
    derived = _lemma4_derived()
    findings = [dimension_finding(ctx, ["rhs"])]
    try:
        paper = canonical(to_mat(ctx.formulas["rhs"])).simplify()
        diff = (paper - derived).simplify()
        ok = diff.is_zero()
        ce = None if ok else {"paper_minus_derived": str(diff), "derived": str(derived),
                              "paper": str(paper)}
        findings.append(Finding("expectation_identity", ok, {"derived": str(derived),
                                                             "paper": str(paper)}, ce,
                                "" if ok else "(32) differs from the derived expectation"))
    except NotImplementedError as exc:
        findings.append(Finding("expectation_identity", None, reason=str(exc)))
    obj25, grad25 = _ridge_minimiser(TAU_SYM)
    obj20, grad20 = _ridge_minimiser(SIZE["m"] * TAU_SYM / SIZE["N"])
    steps = [
        step("Expectation over the noise", r"\mathbb E_\varepsilon\Big[\frac1{2N}\|y-(Z+\varepsilon)^\top"
             r"\lambda\|^2\Big] = " + derived.latex(), "Wick with eps_i ~ N(0, tau I_m) i.i.d."),
        step("Ridge (25)", r"\nabla_\lambda = " + grad25.latex() + r"\ \Rightarrow\ \hat\lambda_\tau = "
             r"(ZZ^\top + N\tau I_m)^{-1}Zy", "the minimiser of (24), by (32)."),
        step("Ridge (20)", r"\nabla_\lambda = " + grad20.latex() + r"\ \Rightarrow\ \hat\lambda = "
             r"(ZZ^\top + m\tau I_m)^{-1}Zy", "eq. (67): the same ridge with tau replaced by m tau / N."),
    ]
    return combine(findings, {"derived": str(derived)}, steps=steps)


def lemma4_numeric(ctx: Context) -> TierResult:
    inst = make_instance(ctx)
    rng = ctx.rng("lemma4")
    Z = inst.dictionary.Z.numpy()
    y = rng.standard_normal((inst.N, 1))
    lam = rng.standard_normal((inst.m, 1))
    try:
        paper = float(np.asarray(float_value(ctx.formulas["rhs"], {
            "y": y, "Z": Z, "lam": lam, "m": inst.m, "N": inst.N, "tau": inst.tau})).reshape(-1)[0])
    except Exception as exc:  # ill-typed
        return combine([Finding("monte_carlo", False, {"error": str(exc)}, {"error": str(exc)}, str(exc))])
    n = ctx.budget.mc_samples
    eps = math.sqrt(inst.tau) * rng.standard_normal((n, inst.m, inst.N))
    r = y.reshape(1, -1) - np.einsum("m,bmn->bn", lam.ravel(), Z[None] + eps)
    samples = (r ** 2).sum(-1) / (2 * inst.N)
    derived = float(_lemma4_derived().evaluate({"Z": Z, "y": y, "lam": lam},
                                                {"m": inst.m, "N": inst.N, "tau": inst.tau}))
    return combine([_mc_compare("monte_carlo", samples, {"paper": paper, "derived": derived}, 2,
                                ["paper", "derived"], {"instance": inst.as_dict(), "seed": ctx.seed})])


LEMMA4 = Claim(
    id="yang2024.lemma4",
    title="Equivalence of the regression problems (24) and (25) (Lemma 4, eq. (32))",
    paper=PAPER,
    statement=(r"$\mathbb E_\epsilon[\frac1{2N}\sum_i(y_i-\lambda^\top(f(v_i)+\epsilon_i))^2]="
               r"\frac1{2N}\sum_i(y_i-\lambda^\top f(v_i))^2+\frac\tau2\|\lambda\|_2^2$."),
    assumptions=("eps_i ~ N(0, tau I_m) i.i.d.; y and lambda fixed",),
    formulas=LEMMA4_FORMULAS,
    checks={"symbolic": lemma4_symbolic, "numeric": lemma4_numeric},
    setting=SETTING,
)



# ==============================================================================================
# Eq. (26): the noise-free limit tau = 0 with N >= m
# ==============================================================================================
PINV = "Transpose(Z)*Inverse(Z*Transpose(Z))"  # Z^dagger for a full-row-rank Z (N >= m)
EQ26_FORMULAS = (
    NamedFormula("A_limit", f"{PINV}*Zhat", (_m, _N, _K, _Z, _Zhat, _J), equation="Sec. 3.3",
                 shape=("N", "K"), description="'A becomes Z^dagger Zhat' when tau = 0 and N >= m "
                 "(Z^dagger = Z^T (Z Z^T)^{-1} for a full-row-rank Z)"),
    NamedFormula("labels", f"Transpose({PINV}*Zhat)*y", (_m, _N, _K, _Z, _Zhat, _y), equation="(26)",
                 shape=("K", "1"), description="y_k = <y, Z^dagger Zhat_{:,k}> for every token k, "
                                               "noise-free labels y = Z^T lambda"),
)
EQ26_CORRECTION = Correction(
    description="the tau -> 0 limit of A is (I_N, Z^dagger Z^Q) = Z^dagger Zhat + (I_N - Z^dagger Z) J",
    reason="for N > m, eps (Z^T Z + eps I)^{-1} tends to the projector I_N - Z^dagger Z onto the null "
           "space of Z, not to 0 (eq. (66) at tau = 0).  (26) itself holds: noise-free labels "
           "y = Z^T lambda are orthogonal to that null space",
    formulas={"A_limit": f"J + {PINV}*(Zhat - Z*J)"},
)


def eq26_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    insts = exact_instances(ctx, shapes=((2, 3), (2, 2)))   # N > m and N = m
    findings = [dimension_finding(ctx, ["A_limit", "labels"])]
    fail, rows, why = None, [], ""
    for inst in insts:
        if inst.Z.rank() < inst.m:
            continue
        Astar, _ = exact_optimum(inst)
        limit = Astar.applyfunc(lambda x: sympy.limit(x, TAU_SYM, 0, "+"))
        val, why = _safe_exact(F["A_limit"], _exact_matrix_values(inst))
        if val is None:
            break
        f = _compare_exact_matrix("A_limit_vs_derived", val, limit, inst, "the tau -> 0 limit of (34)")
        rows.append({"m": inst.m, "N": inst.N, "agree": f is None})
        if f and fail is None:
            f.counterexample["derived_limit"] = [[str(v) for v in r] for r in limit.tolist()]
            f.counterexample["paper_limit"] = [[str(v) for v in r] for r in sympy.Matrix(val).tolist()]
            fail = f
    if why and val is None:
        findings.append(Finding("A_limit_vs_derived", None, reason=f"cannot evaluate: {why}"))
    else:
        findings.append(fail or Finding("A_limit_vs_derived", True, {"instances": rows}))
    # (26): noise-free labels are reproduced
    lam = sympy.Matrix(sympy.symbols("lam0:3")[:2])
    bad, rows = None, []
    for inst in insts:
        y = inst.Z.T * lam
        val, why = _safe_exact(F["labels"], {**_exact_matrix_values(inst), "y": y})
        if val is None:
            break
        truth = inst.Zhat.T * lam
        diff = (sympy.Matrix(val) - truth).applyfunc(sympy.cancel)
        ok = diff == sympy.zeros(inst.K, 1)
        rows.append({"m": inst.m, "N": inst.N, "agree": ok})
        if not ok and bad is None:
            i = _first_nonzero(diff)[0]
            bad = {"instance": inst.as_dict(), "token": i + 1, "paper": str(val[i]), "label": str(truth[i])}
    if val is None:
        findings.append(Finding("noise_free_labels", None, reason=f"cannot evaluate: {why}"))
    else:
        findings.append(Finding("noise_free_labels", bad is None, {"instances": rows}, bad,
                                "" if bad is None else "(26) does not reproduce the noise-free labels"))
    steps = _loss_steps()[-2:] + [
        step("Limit", r"\lim_{\tau\to0^+} A = \lim_{\tau\to 0^+}(Z^\top Z+m\tau I_N)^{-1}(Z^\top\hat Z + "
             r"m\tau(I_N,0)) = (I_N,\ Z^\dagger Z^Q)",
             "Entrywise limits of the derived optimum (rational functions of tau), for N > m and "
             "N = m; for N > m the first block is I_N, not Z^dagger Z."),
        step("Noise-free labels", r"y = Z^\top\lambda\ \Rightarrow\ (Z^\dagger\hat Z)^\top y = "
             r"\hat Z^\top\lambda", "with a symbolic lambda."),
    ]
    return combine(findings, {"instances": [i.as_dict() for i in insts]}, steps=steps)


def eq26_numeric(ctx: Context) -> TierResult:
    F = ctx.formulas
    sizes = dict(SETTING.resolve(ctx.budget.name, ctx.sizes))
    if sizes["N"] < sizes["m"]:
        sizes["m"], sizes["N"] = sizes["N"], sizes["m"]
    if sizes["N"] == sizes["m"]:
        sizes["N"] += 1
    sizes["K"] = max(sizes["K"], sizes["N"] + 1)
    findings = []
    for tau in (1e-4, 1e-6):
        inst = make_instance(ctx, "eq26", sizes, tau)
        fq = float_quadratic(inst)
        vals = _float_matrix_values(inst)
        try:
            lim = np.asarray(float_value(F["A_limit"], vals))
        except Exception as exc:  # ill-typed
            findings.append(Finding(f"A_at_tau_{tau:g}", False, {"error": str(exc)}, {"error": str(exc)},
                                    str(exc)))
            continue
        err = float(np.abs(lim - fq.A).max())
        scale = max(1.0, float(np.abs(fq.A).max()))
        tol = 1e2 * tau * scale + 1e2 * float(np.linalg.cond(fq.G)) * np.finfo(float).eps * scale
        ok = bool(err <= tol)
        findings.append(Finding(f"A_at_tau_{tau:g}", ok, {
            "max_abs_difference": err, "tolerance": tol, "why_tolerance": "A(tau) - A(0) = O(tau), plus rounding of a solve with cond(Z^T Z + m tau I)",
            "sizes": dict(inst.sizes)},
            None if ok else {"instance": inst.as_dict(), "max_abs_difference": err,
                             "block": "prompt columns" if np.abs(lim - fq.A)[:, :inst.N].max() >= err
                             else "query columns"},
            "" if ok else f"A at tau = {tau:g} is {err:.3g} away from the claimed limit"))
    return combine(findings)


EQ26 = Claim(
    id="yang2024.eq26",
    title="Noise-free limit: A becomes Z^dagger Zhat and y_k = <y, Z^dagger Zhat_{:,k}> (eq. (26))",
    paper=PAPER,
    statement=(r"When $\tau=0$ and $N\ge m$, $A$ becomes $Z^\dagger\hat Z$, and the label of each "
               r"token is $y_k=\langle y,Z^\dagger\hat Z_{:,k}\rangle$ (26)."),
    assumptions=("tau -> 0+, N >= m, Z of full row rank m", "noise-free labels y = Z^T lambda"),
    formulas=EQ26_FORMULAS,
    checks={"symbolic": eq26_symbolic, "numeric": eq26_numeric},
    setting=SETTING,
    correction=EQ26_CORRECTION,
)

# ==============================================================================================
# Eq. (27) with (20), (22), (67): the optimum implements ridge regression
# ==============================================================================================
_Amat = FormulaSymbol("A", "matrix", ("N", "K"))
EQ27_FORMULAS = (
    NamedFormula("A", A_TEXT, (_m, _N, _K, _tau, _Z, _Zhat, _J), equation="(34)", shape=("N", "K"),
                 description="the optimal Ahat"),
    NamedFormula("lambda_hat", "Inverse(m*tau*Identity(m) + Z*Z.T)*Z*y", (_m, _N, _tau, _Z, _y),
                 equation="(67)", shape=("m", "1"), description="the minimiser of the ridge problem (20)"),
    NamedFormula("yhat_star", "Transpose(A)*y", (_N, _K, _Amat, _y), equation="(27)", shape=("K", "1"),
                 description="yhat*_k = <y, A_{:,k}>"),
)


def _exact_ridge(inst: ExactInstance, y: sympy.Matrix, reg) -> sympy.Matrix:
    """The minimiser of the derived ridge objective (1/2N)||y - Z^T l||^2 + (reg/2)||l||^2."""
    obj, _ = _ridge_minimiser(reg)
    ls = sympy.symbols(f"l0:{inst.m}")
    val = sympy.expand(obj.evaluate({"Z": inst.Z, "y": y, "lam": sympy.Matrix(ls)},
                                    _sizes_scalars(inst.m, inst.N), exact=True))
    Hs = sympy.hessian(val, ls)
    g0 = sympy.Matrix([sympy.diff(val, l) for l in ls]).subs({l: 0 for l in ls})
    return (-(Hs.inv() * g0)).applyfunc(sympy.cancel)


def eq27_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    insts = exact_instances(ctx)
    findings = [dimension_finding(ctx, ["A", "lambda_hat", "yhat_star"])]
    fail_l, fail_y, why = None, None, ""
    for inst in insts:
        y = sympy.Matrix(sympy.symbols(f"y0:{inst.N}"))
        lam_derived = _exact_ridge(inst, y, SIZE["m"] * TAU_SYM / SIZE["N"])     # (20)
        vals = {**_exact_matrix_values(inst), "y": y}
        lam_paper, why = _safe_exact(F["lambda_hat"], vals)
        if lam_paper is None:
            break
        f = _compare_exact_matrix("lambda_hat_vs_ridge_20", lam_paper, lam_derived, inst, "(67)")
        fail_l = fail_l or f
        ystar = sympy.Matrix.vstack(y, inst.Zhat[:, inst.N:].T * lam_derived)   # (22)
        A, why = _safe_exact(F["A"], vals)
        if A is None:
            break
        yv, why = _safe_exact(F["yhat_star"], {**vals, "A": A})
        if yv is None:
            break
        f = _compare_exact_matrix("yhat_star_vs_22", yv if isinstance(yv, sympy.MatrixBase)
                                  else sympy.Matrix([yv]), ystar, inst, "(27)")
        fail_y = fail_y or f
    if why:
        findings.append(Finding("ridge", None, reason=f"cannot evaluate: {why}"))
    else:
        findings.append(fail_l or Finding("lambda_hat_vs_ridge_20", True, {"instances": len(insts)}))
        findings.append(fail_y or Finding("yhat_star_vs_22", True, {"instances": len(insts)}))
    _, grad20 = _ridge_minimiser(SIZE["m"] * TAU_SYM / SIZE["N"])
    steps = [
        step("Ridge (20)", r"\nabla_\lambda\Big[\frac1{2N}\|y-Z^\top\lambda\|^2 + \frac{m\tau}{2N}"
             r"\|\lambda\|^2\Big] = " + grad20.latex(),
             "The derived gradient; solved exactly with symbolic y (tau symbolic)."),
        step("Prediction (22)", r"\hat y^\star = \begin{pmatrix} y \\ (Z^Q)^\top\hat\lambda\end{pmatrix}",
             "compared with A^T y, A from (34), entrywise as rational functions."),
    ]
    return combine(findings, {"instances": [i.as_dict() for i in insts]}, steps=steps)


def eq27_numeric(ctx: Context) -> TierResult:
    F = ctx.formulas
    findings = []
    gen = ctx.rng("eq27")
    for tag, inst in (("budget", make_instance(ctx)),
                      ("paper_sizes", make_instance(ctx, "paper-size", BUDGET_SIZES["paper"],
                                                    BUDGET_TAU["paper"]))):
        D = inst.dictionary
        Z, ZQ = D.Z.numpy(), D.ZQ.numpy()
        y = gen.standard_normal((inst.N, 1))
        vals = {**_float_matrix_values(inst), "y": y}
        try:
            lam = np.asarray(float_value(F["lambda_hat"], vals))
            A = np.asarray(float_value(F["A"], vals))
            ystar = np.asarray(float_value(F["yhat_star"], {**vals, "A": A})).reshape(-1)
        except Exception as exc:  # ill-typed
            findings.append(Finding(tag, False, {"error": str(exc)}, {"error": str(exc)}, str(exc)))
            continue
        # independent solves: ridge normal equations and the derived optimum
        lam_ref = np.linalg.lstsq(np.vstack([Z.T, np.sqrt(inst.m * inst.tau) * np.eye(inst.m)]),
                                  np.vstack([y, np.zeros((inst.m, 1))]), rcond=None)[0]
        ref = np.concatenate([y.ravel(), (ZQ.T @ lam_ref).ravel()])
        e1 = float(np.abs(lam - lam_ref).max() / np.abs(lam_ref).max())
        e2 = float(np.abs(ystar - ref).max() / np.abs(ref).max())
        fq = float_quadratic(inst)
        e3 = float(np.abs(fq.A.T @ y.ravel() - ref).max() / np.abs(ref).max())
        tol = 1e-8
        ok = max(e1, e2, e3) <= tol
        findings.append(Finding(tag, ok, {"lambda_hat_rel_error": e1, "yhat_star_rel_error": e2,
                                          "derived_optimum_rel_error": e3, "tolerance": tol,
                                          "sizes": dict(inst.sizes), "tau": inst.tau},
                                None if ok else {"instance": inst.as_dict(), "errors": [e1, e2, e3]},
                                "" if ok else "the ridge solution differs"))
    return combine(findings)


EQ27 = Claim(
    id="yang2024.eq27",
    title="At the optimum the transformer performs ridge regression: yhat*_k = <y, A_{:,k}> (eq. (27))",
    paper=PAPER,
    statement=(r"$\hat y^\star_k=\langle y,A_{:,k}\rangle$ with $\hat y^\star=(y;(Z^Q)^\top\hat\lambda)$ "
               r"(22) and $\hat\lambda=(m\tau I_m+ZZ^\top)^{-1}Zy$ (67) the ridge solution of (20)."),
    assumptions=("A of eq. (34)",),
    formulas=EQ27_FORMULAS,
    checks={"symbolic": eq27_symbolic, "numeric": eq27_numeric},
    setting=SETTING,
)


# ==============================================================================================
# Training dynamics: the reparametrised loss l(xi) of Lemma 6 and the constants of Thm. 1
# ==============================================================================================
@dataclass
class Dynamics:
    """A float64 instance with the derived loss as a torch function of (Q, w)."""

    inst: Instance
    fq: FloatQuadratic

    def __post_init__(self) -> None:
        D = self.inst.dictionary
        self.V_all = D.V_all
        self.V = D.V
        self.G = torch.tensor(self.fq.G)
        self.A = torch.tensor(self.fq.A)
        w, U = np.linalg.eigh(self.fq.G)
        self.Zbar = U @ np.diag(np.sqrt(w)) @ U.T                    # (Z^T Z + m tau I)^{1/2}
        self.Zbar_t = torch.tensor(self.Zbar)
        self.Zbar_norm = float(np.sqrt(w.max()))
        self.fbar_max = float(np.linalg.norm(self.Zbar, axis=0).max())
        self.A_norm = float(np.linalg.norm(self.fq.A, 2))
        Zn = D.Z.numpy()
        self.ZtZhat_norm = float(np.linalg.norm(Zn.T @ D.Zhat.numpy(), 2))

    def Ahat(self, Q: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        return coefficient_matrix(attention_weights(self.V, self.V_all, Q), w)

    def excess(self, Q: torch.Tensor, w: torch.Tensor) -> torch.Tensor:
        """L(theta) - L* = (1/2K) ||Zbar (Ahat - A)||_F^2, from the derived quadratic."""
        R = self.Ahat(Q, w) - self.A
        return 0.5 * (R * (self.G @ R)).sum() / self.inst.K

    def B(self, Q: torch.Tensor) -> torch.Tensor:
        """B_k = Zbar C_k (eq. (13)), shape (K, N, H)."""
        S = attention_weights(self.V, self.V_all, Q)              # (H, N, K)
        C = S.permute(2, 1, 0)                                    # (K, N, H)
        return self.Zbar_t @ C

    def zeta(self, Q: torch.Tensor) -> float:
        """min_k lambda_min(B_k B_k^T) (eq. (14))."""
        B = self.B(Q)
        return float(torch.linalg.eigvalsh(B @ B.mT)[:, 0].min())


def dynamics(inst: Instance) -> Dynamics:
    return Dynamics(inst, float_quadratic(inst))


def init_Q(inst: Instance, gen: torch.Generator, beta: float = 1.0) -> torch.Tensor:
    """Q_h^{(0)} entries i.i.d. N(0, beta^2) (Prop. 1)."""
    return beta * randn(inst.H, inst.d, inst.d, generator=gen, dtype=torch.float64)


def _grads(dyn: Dynamics, Q: torch.Tensor, w: torch.Tensor) -> tuple[float, torch.Tensor, torch.Tensor]:
    Q = Q.detach().requires_grad_(True)
    w = w.detach().requires_grad_(True)
    ex = dyn.excess(Q, w)
    gQ, gw = torch.autograd.grad(ex, (Q, w))
    return float(ex.detach()), gQ, gw


# ==============================================================================================
# Proposition 1: H >= N Gaussian heads give B_k full row rank almost surely
# ==============================================================================================
PROP1_FORMULAS = (
    NamedFormula("H_min", "N", (_N,), equation="Prop. 1",
                 description="the number of heads from which a Gaussian initialisation gives full "
                             "row rank B_k for every k almost surely"),
)


def prop1_symbolic(ctx: Context) -> TierResult:
    """N = 2: det C_k vanishes iff (v_1 - v_2)^T (Q_1 - Q_2) v_k = 0, a null set of Gaussian Q."""
    d = 2
    v1 = sympy.Matrix(sympy.symbols("a0:2"))
    v2 = sympy.Matrix(sympy.symbols("b0:2"))
    vk = sympy.Matrix(sympy.symbols("c0:2"))
    Q1 = sympy.Matrix(d, d, lambda i, j: sympy.Symbol(f"p_{i}{j}"))
    Q2 = sympy.Matrix(d, d, lambda i, j: sympy.Symbol(f"r_{i}{j}"))
    V = sympy.Matrix.hstack(v1, v2)
    S = attention_weights(V, vk, [Q1, Q2])
    C = head_matrix(S, 0)                                     # 2 x 2
    det = sympy.together(C.det())
    u = sympy.expand(((v1 - v2).T * (Q1 - Q2) * vk)[0, 0])
    num, den = sympy.fraction(det)
    terms = sympy.Add.make_args(sympy.expand(num))
    exps = []
    for t in terms:
        coeff, rest = t.as_coeff_Mul()
        rest = sympy.powsimp(rest)
        if isinstance(rest, sympy.exp) and abs(coeff) == 1:
            exps.append((coeff, sympy.expand(rest.args[0])))
    # the numerator is exp(P) - exp(R) with P - R = u: det = 0 iff u = 0
    shape_ok = len(terms) == 2 and len(exps) == 2 and exps[0][0] == -exps[1][0]
    if shape_ok:
        (c1, P), (_, R) = exps
        gap = sympy.expand(P - R)
        shape_ok = gap in (u, -u)
    swap = {sympy.Symbol(f"p_{i}{j}"): sympy.Symbol(f"r_{i}{j}") for i in range(d) for j in range(d)}
    zero_set = sympy.simplify(det.subs(swap, simultaneous=True))          # Q_1 = Q_2: u = 0
    same_token = sympy.simplify(det.subs({sympy.Symbol("b0"): sympy.Symbol("a0"),
                                          sympy.Symbol("b1"): sympy.Symbol("a1")}))
    vals = {s: sympy.Rational(i % 5 - 2, 1 + i % 3) for i, s in enumerate(sorted(det.free_symbols, key=str))}
    vals.update({sympy.Symbol("a0"): 1, sympy.Symbol("a1"): 0, sympy.Symbol("b0"): 0, sympy.Symbol("b1"): 1})
    off = sympy.nsimplify(det.subs(vals))
    H_min = sympy.sympify(ctx.formulas["H_min"]).subs(SIZE["N"], 2)
    ok_struct = shape_ok and zero_set == 0 and same_token == 0 and off != 0
    findings = [Finding("N2_determinant", ok_struct, {
        "numerator_is_exp_P_minus_exp_R_with_P_minus_R_eq_pm_u": shape_ok,
        "u": str(u), "det_at_Q1_eq_Q2": str(zero_set),
        "det_with_v1_eq_v2": str(same_token), "det_at_a_generic_point": str(off)},
        reason="" if ok_struct else "the N = 2 determinant does not have the expected zero set")]
    ok = bool(H_min <= 2) and bool(H_min >= 2)
    findings.append(Finding("H_min_at_N_2", ok, {"paper_H_min": str(H_min), "derived": 2},
                            None if ok else {"N": 2, "paper_H_min": str(H_min), "derived_H_min": 2,
                                             "why": "C_k is N x H: rank <= H, so H >= N is necessary; "
                                                    "with H = N = 2 the determinant vanishes only on a "
                                                    "hyperplane of (Q_1, Q_2)"},
                            "" if ok else "the number of heads needed at N = 2 is 2"))
    steps = [step("N = 2", r"\det C_k = s^1_{1k}s^2_{2k} - s^1_{2k}s^2_{1k} \propto "
                  r"e^{u} - 1,\ u = (v_1-v_2)^\top(Q_1-Q_2)v_k",
                  "C_k = (softmax(V^T Q_1 v_k), softmax(V^T Q_2 v_k)); its determinant vanishes iff "
                  "u = 0: a hyperplane in the Gaussian (Q_1, Q_2) when v_1 != v_2 and v_k != 0 "
                  "(probability 0), and identically when v_1 = v_2 (Assumption 3 is needed)."),
             step("Necessity", r"\operatorname{rank} B_k \le \operatorname{rank} C_k \le H",
                  "B_k = Zbar C_k is N x H, so full row rank needs H >= N.")]
    return combine(findings, steps=steps)


def prop1_numeric(ctx: Context) -> TierResult:
    """Random dictionaries and Gaussian initialisations: rank of every B_k for H around H_min."""
    H_min = int(sympy.sympify(ctx.formulas["H_min"]).subs(SIZE["N"], SETTING.resolve(
        ctx.budget.name, ctx.sizes)["N"]))
    base = SETTING.resolve(ctx.budget.name, ctx.sizes)
    N = base["N"]
    dictionaries, draws = {"quick": (2, 10), "default": (5, 20)}.get(ctx.budget.name, (4, 25))
    trials = dictionaries * draws
    rows, fail = [], None
    for H in sorted({max(1, H_min - 1), max(1, H_min), max(1, H_min) + 1, 2 * N}):
        full_rank, min_sv, log_zeta = 0, math.inf, []
        for r in range(dictionaries):            # Prop. 1: a fixed dictionary, random Q^(0)
            inst = make_instance(ctx, f"prop1-{H}-{r}", {**base, "H": H})
            dyn = dynamics(inst)
            for t in range(draws):
                gen = torch.Generator().manual_seed(ctx.seed_for("prop1-init", H, r, t))
                B = dyn.B(init_Q(inst, gen, beta=1.0))
                sv = torch.linalg.svdvals(B)                  # (K, min(N, H))
                rel = (sv[:, -1] / sv[:, 0]).min().item() if H >= N else 0.0
                rank_ok = H >= N and rel > 1e-10
                full_rank += int(rank_ok)
                min_sv = min(min_sv, rel)
                if rank_ok:
                    log_zeta.append(math.log10(float((sv[:, -1] ** 2).min())))
        row = {"H": H, "N": N, "trials": trials, "dictionaries": dictionaries, "full_row_rank": full_rank,
               "min_relative_singular_value": min_sv,
               "log10_zeta0_range": [min(log_zeta), max(log_zeta)] if log_zeta else None}
        rows.append(row)
        if H >= H_min and full_rank < trials and fail is None:
            fail = {"H": H, "N": N, "rank_deficient_trials": trials - full_rank, "seed": ctx.seed,
                    "note": "B_k = Zbar C_k is N x H; rank < N"}
    ok = fail is None
    return combine([Finding("full_row_rank", ok, {"per_H": rows, "rank_threshold": "sigma_min / "
                            "sigma_max > 1e-10 (float64)", "beta": 1.0}, fail,
                            "" if ok else f"with H = {fail['H']} >= H_min some B_k is rank deficient")])


PROP1 = Claim(
    id="yang2024.prop1",
    title="Gaussian initialisation with H >= N satisfies Assumption 2 a.s. (Prop. 1)",
    paper=PAPER,
    statement=(r"Under Assumptions 1, 3 and $H\ge N$, $Q_h^{(0)}(i,j)\sim\mathcal N(0,\beta^2)$ i.i.d. "
               r"gives $B_k^{(0)}$ of full row rank for all $k$ almost surely."),
    assumptions=("Assumption 3: some row of V has distinct entries", "w^(0) = 0 is irrelevant here"),
    formulas=PROP1_FORMULAS,
    checks={"symbolic": prop1_symbolic, "numeric": small_threads(prop1_numeric)},
    setting=SETTING,
)


# ==============================================================================================
# Lemma 6: the reparametrisation xi = (Q_h, w_h / gamma)
# ==============================================================================================
_etaQ = FormulaSymbol("eta_Q", positive=True)
_etaw = FormulaSymbol("eta_w", positive=True)
LEMMA6_FORMULAS = (
    NamedFormula("gamma", "sqrt(eta_w/eta_Q)", (_etaQ, _etaw), equation="(39)",
                 description="gamma such that GD on (Q, w) with (eta_Q, eta_w) is GD on "
                             "xi = (Q, w / gamma) with eta_Q"),
)


def lemma6_symbolic(ctx: Context) -> TierResult:
    g, eQ, ew, a, Lp = sympy.symbols("gamma eta_Q eta_w alpha Lprime", positive=True)
    # alpha' = alpha - eta_Q d/dalpha L(gamma alpha) = alpha - eta_Q gamma L'(w); w' = gamma alpha'
    w_next_xi = g * (a - eQ * g * Lp)
    w_next_theta = g * a - ew * Lp                     # w' = w - eta_w L'(w), w = gamma alpha
    sols = [s for s in sympy.solve(sympy.Eq(w_next_xi, w_next_theta), g) if s.is_positive is not False]
    derived = sols[0] if len(sols) == 1 else None
    paper = ctx.formulas["gamma"]
    ok = derived is not None and sympy.simplify(paper.subs({sympy.Symbol("eta_Q", positive=True): eQ,
                                                              sympy.Symbol("eta_w", positive=True): ew})
                                                - derived) == 0
    ce = None if ok else {"derived_gamma": str(derived), "paper_gamma": ctx.formula_texts["gamma"],
                          "at_eta_Q_1_eta_w_4": {"derived": str(derived.subs({eQ: 1, ew: 4})) if derived
                                                 is not None else None,
                                                 "paper": str(paper.subs({sympy.Symbol("eta_Q", positive=True): 1,
                                                                          sympy.Symbol("eta_w", positive=True): 4}))}}
    steps = [step("Chain rule", r"\nabla_\alpha \ell(\xi) = \gamma\,\nabla_w\mathcal L(\theta),\quad w = \gamma\alpha",
                  "l(xi) = L(Q, gamma alpha)."),
             step("Matching the updates", r"\gamma(\alpha - \eta_Q\gamma\mathcal L') = \gamma\alpha - "
                  r"\eta_w\mathcal L'\ \Rightarrow\ \gamma = " + sympy.latex(derived),
                  "the positive root.")]
    return combine([Finding("gamma", ok, {"derived": str(derived)}, ce,
                            "" if ok else "(39) does not make the two GD runs coincide")], steps=steps)


def lemma6_numeric(ctx: Context) -> TierResult:
    inst = make_instance(ctx)
    dyn = dynamics(inst)
    gen = torch.Generator().manual_seed(ctx.seed_for("lemma6"))
    Q0 = init_Q(inst, gen)
    eta_Q, eta_w = 0.05, 0.7  # gamma = sqrt(14), irrational: the runs agree only up to rounding
    gamma = float(sympy.sympify(ctx.formulas["gamma"]).subs({sympy.Symbol("eta_Q", positive=True): eta_Q,
                                                              sympy.Symbol("eta_w", positive=True): eta_w}))
    steps = 40
    Q, w = Q0.clone(), torch.zeros(inst.H, inst.K, dtype=torch.float64)
    Qx, al = Q0.clone(), torch.zeros(inst.H, inst.K, dtype=torch.float64)
    worst = 0.0
    for t in range(steps):
        _, gQ, gw = _grads(dyn, Q, w)
        Q, w = Q - eta_Q * gQ, w - eta_w * gw                         # eq. (10)
        Qx_ = Qx.detach().requires_grad_(True)
        al_ = al.detach().requires_grad_(True)
        ell = dyn.excess(Qx_, gamma * al_)                             # l(xi) = L(Q, gamma alpha)
        gQx, gal = torch.autograd.grad(ell, (Qx_, al_))
        Qx, al = Qx - eta_Q * gQx, al - eta_Q * gal                    # eq. (41)
        dev = max(float((Qx - Q).abs().max() / Q.abs().max()),
                  float((gamma * al - w).abs().max() / max(float(w.abs().max()), 1e-300)))
        worst = max(worst, dev)
    tol = 1e-9
    ok = worst <= tol
    return combine([Finding("trajectories", ok, {
        "max_relative_deviation": worst, "tolerance": tol, "steps": steps, "eta_Q": eta_Q,
        "eta_w": eta_w, "gamma": gamma, "why_tolerance": "float64 rounding over 40 steps"},
        None if ok else {"instance": inst.as_dict(), "gamma": gamma, "max_relative_deviation": worst},
        "" if ok else "GD on xi with eta_Q does not reproduce GD on theta with (eta_Q, eta_w)")],
        {"instance": inst.as_dict()})


LEMMA6 = Claim(
    id="yang2024.lemma6",
    title="Reparametrisation xi = (Q_h, w_h / gamma) unifies the learning rates (Lemma 6)",
    paper=PAPER,
    statement=(r"With $\gamma=\sqrt{\eta_w/\eta_Q}$, $\alpha_h=w_h/\gamma$, $\ell(\xi)=\mathcal L(\theta)$, "
               r"the GD (10) is $\xi^{(t)}=\xi^{(t-1)}-\eta_Q\nabla_\xi\ell(\xi^{(t-1)})$ (41)."),
    assumptions=("any differentiable loss",),
    formulas=LEMMA6_FORMULAS,
    checks={"symbolic": lemma6_symbolic, "numeric": small_threads(lemma6_numeric)},
    setting=SETTING,
)

# ==============================================================================================
# Lemmas 7-9: gradient, Lipschitz and norm bounds
# ==============================================================================================
_gam = FormulaSymbol("gamma", positive=True)
_alp = FormulaSymbol("alpha", positive=True)
_fbar = FormulaSymbol("fbar_max", positive=True)
_exc = FormulaSymbol("excess", positive=True)
_Zbn = FormulaSymbol("Zbar_norm", positive=True)
_An = FormulaSymbol("A_norm", positive=True)
_dQh = FormulaSymbol("dQ_h", positive=True)
_dQ = FormulaSymbol("dQ", positive=True)
_dak = FormulaSymbol("dalpha_k", positive=True)

LEMMA7_FORMULAS = (
    NamedFormula("grad_bound", "2*sqrt(2)*gamma*alpha*fbar_max*sqrt(excess)", (_gam, _alp, _fbar, _exc),
                 equation="(42)", description="bound on ||d l / d Q_h||_F", weaker="larger"),
)


def _random_points(inst: Instance, gen: torch.Generator, count: int):
    """(Q, w) pairs at several scales: near-uniform and peaked attention, small and large w."""
    for i in range(count):
        qs = (0.3, 1.0, 3.0)[i % 3]
        ws = (0.1, 1.0, 5.0)[(i // 3) % 3]
        Q = qs * randn(inst.H, inst.d, inst.d, generator=gen, dtype=torch.float64)
        w = ws * randn(inst.H, inst.K, generator=gen, dtype=torch.float64)
        yield Q, w


def _extreme_points(inst: Instance, gen: torch.Generator):
    """(Q, w) where the bounds of Lemmas 8, 9 are nearly tight: w = 0 (Ahat = 0, delta_k = -A e_k),
    and identical peaked heads with equal-sign w_hk (Ahat e_k = sum_h w_hk s_k -> H gamma alpha e_j)."""
    Q1 = 8.0 * randn(1, inst.d, inst.d, generator=gen, dtype=torch.float64)
    yield 0.3 * randn(inst.H, inst.d, inst.d, generator=gen, dtype=torch.float64), \
        torch.zeros(inst.H, inst.K, dtype=torch.float64)
    for ws in (1.0, 30.0):
        yield Q1.expand(inst.H, inst.d, inst.d).clone(), torch.full((inst.H, inst.K), ws, dtype=torch.float64)


def _ratio(lhs: float, bound: float) -> float:
    """lhs / bound for a bound on a norm; a bound <= 0 below a positive lhs is exceeded infinitely."""
    if bound > 0:
        return lhs / bound
    return 0.0 if lhs <= 0 and bound == 0 else math.inf


def lemma7_symbolic(ctx: Context) -> TierResult:
    K = SIZE["K"]
    c83 = 2                                   # ||(v_j - v_i) v_k^T|| <= 2 for unit tokens (83)
    # (1/K) sum_k ||Zbar delta_k|| <= (1/K) sqrt(K) sqrt(sum_k ||Zbar delta_k||^2) = sqrt(2 (l - L*) / K) * sqrt(K) / sqrt(K)
    chain = sympy.simplify(c83 / K * sympy.sqrt(K) * sympy.sqrt(2 * K))
    g, a, fb, ex = (sympy.Symbol(n, positive=True) for n in ("gamma", "alpha", "fbar_max", "excess"))
    derived = chain * g * a * fb * sympy.sqrt(ex)            # (82)-(84): the bound the proof gives
    paper = sympy.sympify(ctx.formulas["grad_bound"])
    ok, ce = _ratio_at_least_one(paper / derived, ctx.rng("lemma7-symbolic"))
    steps = [step("Gradient (82)", r"\frac{\partial\ell}{\partial Q_h} = \frac\gamma K\sum_{k,j}(\bar Z\delta_k)^\top"
                  r"\bar z_j\,\alpha_{h,k}s^h_{jk}\sum_i s^h_{ik}(v_j-v_i)v_k^\top",
                  "checked against autograd in the numeric tier"),
             step("Chain (83)-(84)", r"\Big\|\frac{\partial\ell}{\partial Q_h}\Big\|_F \le \frac{2\gamma\alpha\bar f_{\max}}"
                  r"{K}\sqrt K\Big(\sum_k\|\bar Z\delta_k\|^2\Big)^{1/2} = " + sympy.latex(chain) +
                  r"\,\gamma\alpha\bar f_{\max}\sqrt{\ell-\mathcal L^\star}",
                  "sum_j s_jk = 1, Cauchy-Schwarz over k, sum_k ||Zbar delta_k||^2 = 2K (l - L*).")]
    return combine([Finding("bound_from_the_proof", ok, {"derived_bound": str(derived),
                                                         "paper_bound": str(paper)},
                            None if ok else {"derived_bound": str(derived), "paper_bound": str(paper),
                                             **(ce or {})},
                            "" if ok else "(42) is below the bound the proof (82)-(84) gives",
                            _proof_margin(paper / derived, ctx.rng("lemma7-symbolic-margin")),
                            proof_step="(82)-(84)")],
                   steps=steps)


def lemma7_numeric(ctx: Context) -> TierResult:
    inst = make_instance(ctx)
    dyn = dynamics(inst)
    gen = torch.Generator().manual_seed(ctx.seed_for("lemma7"))
    F = ctx.formulas["grad_bound"]
    worst, where = 0.0, None
    count = 0
    for gamma in (0.1, 1.0, 10.0):
        for Q, w in _random_points(inst, gen, 9):
            ex, gQ, _ = _grads(dyn, Q, w)
            alpha = float(w.abs().max()) / gamma
            bound = float_value(F, {"gamma": gamma, "alpha": alpha, "fbar_max": dyn.fbar_max,
                                    "excess": ex})
            norms = gQ.flatten(1).norm(dim=1)                 # ||d l / d Q_h||_F, h = 1..H
            r = _ratio(float(norms.max()), bound)
            count += 1
            if r > worst:
                worst, where = r, {"gamma": gamma, "alpha": alpha, "excess": ex,
                                   "grad_norm": float(norms.max()), "bound": bound}
    ok = worst <= 1.0
    return combine([Finding("bound_holds", ok, {"worst_ratio_grad_over_bound": worst, "points": count,
                                                 "worst_point": where},
                            None if ok else {"instance": inst.as_dict(), **where, "seed": ctx.seed},
                            "" if ok else f"a gradient exceeds (42) by a factor {worst:.3g}",
                            _worst_margin("||d l / d Q_h||_F over (42)", worst, where),
                            search=True)],
                   {"instance": inst.as_dict()})


LEMMA7 = Claim(
    id="yang2024.lemma7",
    title="Gradient norm bound (Lemma 7, eq. (42))",
    paper=PAPER,
    statement=(r"If $|\alpha_{h,k}|\le\alpha$ then $\|\partial\ell/\partial Q_h\|_F\le 2\sqrt2\gamma\alpha"
               r"\bar f_{\max}\sqrt{\ell(\xi)-\mathcal L^\star}$."),
    assumptions=("unit-norm tokens", "L* the infimum of the loss"),
    formulas=LEMMA7_FORMULAS,
    checks={"symbolic": lemma7_symbolic, "numeric": small_threads(lemma7_numeric)},
    setting=SETTING,
)

LEMMA8_FORMULAS = (
    NamedFormula("b_lip", "2*Zbar_norm*dQ_h", (_Zbn, _dQh), equation="(50)",
                 description="bound on ||b_k^h(theta) - b_k^h(theta')||_2", weaker="larger",
                 proof=lambda: lemma8_chain()["b_lip"]),
    NamedFormula("delta_lip", "2*gamma*sqrt(H)*alpha*dQ + gamma*sqrt(H)*dalpha_k",
                 (_gam, _H, _alp, _dQ, _dak), equation="(51)",
                 description="bound on ||delta_k(theta) - delta_k(theta')||_2", weaker="larger",
                 proof=lambda: lemma8_chain()["delta_lip"]),
)
LEMMA9_FORMULAS = (
    NamedFormula("b_bound", "Zbar_norm", (_Zbn,), equation="(52)", description="bound on ||b_k^h||_2",
                 weaker="larger"),
    NamedFormula("delta_bound", "gamma*H*alpha + A_norm", (_gam, _H, _alp, _An), equation="(53)",
                 description="bound on ||delta_k||_2", weaker="larger"),
)


def _bk_delta(dyn: Dynamics, Q: torch.Tensor, w: torch.Tensor):
    B = dyn.B(Q)                                                # (K, N, H): columns b_k^h
    delta = dyn.Ahat(Q, w) - dyn.A                              # (N, K): columns delta_k
    return B, delta


def _bounds_points(inst: Instance, F, gen: torch.Generator, which: str, worst: dict, where: dict) -> None:
    """Update worst[name] (the largest lhs / bound) over the points and three gammas."""
    dyn = dynamics(inst)
    pts = list(_random_points(inst, gen, 9)) + list(_extreme_points(inst, gen))
    for gamma in (0.1, 1.0, 10.0):
        for i, (Q, w) in enumerate(pts):
            B, delta = _bk_delta(dyn, Q, w)
            al = w / gamma
            if which == "lemma9":
                alpha = float(al.abs().max())
                vals = {"gamma": gamma, "H": inst.H, "alpha": alpha, "Zbar_norm": dyn.Zbar_norm,
                        "A_norm": dyn.A_norm}
                ratios = {"b_bound": _ratio(float(B.norm(dim=1).max()), float_value(F["b_bound"], vals)),
                          "delta_bound": _ratio(float(delta.norm(dim=0).max()),
                                                float_value(F["delta_bound"], vals))}
            else:
                scale = (1e-3, 0.1, 1.0)[i % 3]
                Q2 = Q + scale * randn(Q.shape, generator=gen, dtype=torch.float64)
                w2 = w + scale * randn(w.shape, generator=gen, dtype=torch.float64)
                B2, delta2 = _bk_delta(dyn, Q2, w2)
                al2 = w2 / gamma
                alpha = max(float(al.abs().max()), float(al2.abs().max()))
                dQh = (Q - Q2).flatten(1).norm(dim=1)               # (H,)
                dQ = float(dQh.norm())
                lhs_b = (B - B2).norm(dim=1)                         # (K, H): ||b_k^h - b_k^h'||
                rhs_b = torch.tensor([float_value(F["b_lip"], {"Zbar_norm": dyn.Zbar_norm, "dQ_h": float(x)})
                                      for x in dQh], dtype=torch.float64)
                rb = max(_ratio(float(x), float(y)) for x, y in zip(lhs_b.flatten(), rhs_b.expand_as(lhs_b).flatten()))
                lhs_d = (delta - delta2).norm(dim=0)                 # (K,)
                dal = (al - al2).norm(dim=0)                         # (K,)
                rhs_d = torch.tensor([float_value(F["delta_lip"], {
                    "gamma": gamma, "H": inst.H, "alpha": alpha, "dQ": dQ, "dalpha_k": float(x)})
                    for x in dal], dtype=torch.float64)
                rd = max(_ratio(float(x), float(y)) for x, y in zip(lhs_d, rhs_d))
                ratios = {"b_lip": rb, "delta_lip": rd}
            for name, r in ratios.items():
                if r > worst.get(name, 0.0):
                    worst[name] = r
                    where[name] = {"gamma": gamma, "H": inst.H, "point": i, "ratio": r}


def _bounds_numeric(ctx: Context, which: str) -> TierResult:
    """Lemmas 8, 9 at random and near-tight points of the quick instance and of the same
    dictionary with one head (H enters the bounds; ||A||_2 > 1 there tells H from a constant)."""
    sizes = SETTING.resolve(ctx.budget.name, ctx.sizes)
    F = ctx.formulas
    gen = torch.Generator().manual_seed(ctx.seed_for(which))
    worst = {}
    where = {}
    for inst in (make_instance(ctx, sizes=sizes), make_instance(ctx, sizes={**sizes, "H": 1})):
        _bounds_points(inst, F, gen, which, worst, where)
    inst = make_instance(ctx, sizes=sizes)
    points = 2 * 3 * (9 + 3)                  # two instances, three gammas, 12 points
    findings = []
    for name, r in worst.items():
        ok = r <= 1.0
        findings.append(Finding(name, ok, {"worst_ratio_lhs_over_bound": r, "at": where[name],
                                           "points": points},
                                None if ok else {"instance": inst.as_dict(), **where[name], "seed": ctx.seed},
                                "" if ok else f"{name} is exceeded by a factor {r:.3g}",
                                _worst_margin(f"the norm {name} bounds over {name}", r, where[name]),
                                search=True))
    return combine(findings, {"instance": inst.as_dict()})


# ---------------------------------------------------------------------------------------------
# Proof chains of Lemmas 8-10: every constant of a step is computed here (or read from the named
# formula of the lemma the step cites), and the printed bound must be at least the chain's bound.
# ---------------------------------------------------------------------------------------------
UNIT = sympy.Integer(1)   # ||v_k||_2 of every token: the dictionary's tokens have unit norm


def _l2_over_l1() -> sympy.Expr:
    """The least c with ||x||_2 <= c ||x||_1 (any length): with a_i = |x_i|,
    (sum a_i)^2 - sum a_i^2 = 2 sum_{i<j} a_i a_j has nonnegative coefficients, and e_1 attains it."""
    a = sympy.symbols("a0:4", nonnegative=True)
    gap = sympy.Poly(sympy.expand(sum(a) ** 2 - sum(x ** 2 for x in a)), *a)
    if any(c < 0 for c in gap.coeffs()):
        raise RuntimeError("||x||_2 <= ||x||_1: the expansion has a negative coefficient")
    e1 = (1, 0, 0, 0)
    return sympy.sqrt(sum(x ** 2 for x in e1)) / sum(e1)


def _softmax_l1() -> sympy.Expr:
    """||softmax(u)||_1 = sum_j softmax(u)_j, by sympy for a symbolic u of length 3."""
    u = sympy.symbols("u0:3", real=True)
    total = sympy.simplify(sum(softmax_columns(sympy.Matrix(u))))
    if total.free_symbols:
        raise RuntimeError(f"the entries of a softmax sum to {total}, not a constant")
    return total


def _bilinear_over_frobenius() -> sympy.Expr:
    """The constant c in |v^T M u| <= c ||M||_F for unit tokens v, u: Cauchy-Schwarz on vec(M)
    and vec(v u^T) (Lagrange's identity, by sympy at d = 2), ||v u^T||_F = ||v||_2 ||u||_2."""
    v = sympy.Matrix(sympy.symbols("v0:2", real=True))
    u = sympy.Matrix(sympy.symbols("u0:2", real=True))
    M = sympy.Matrix(2, 2, sympy.symbols("M0:4", real=True))
    a, b = list(M), list(v * u.T)
    lagrange = sum((a[i] * b[j] - a[j] * b[i]) ** 2 for i in range(4) for j in range(i + 1, 4))
    cs_gap = sympy.expand(sum(x ** 2 for x in a) * sum(x ** 2 for x in b) - sum(x * y for x, y in zip(a, b)) ** 2
                          - lagrange)
    outer = sympy.expand(sum(x ** 2 for x in b) - (v.T * v)[0] * (u.T * u)[0])
    if cs_gap != 0 or outer != 0 or sympy.expand((v.T * M * u)[0] - sum(x * y for x, y in zip(a, b))) != 0:
        raise RuntimeError("|v^T M u| <= ||M||_F ||v|| ||u||: an identity failed")
    return UNIT * UNIT                                         # ||v_j||_2 ||v_k||_2


def _cauchy_schwarz(n: sympy.Expr) -> sympy.Expr:
    """sum_{i<=n} x_i <= ||1_n||_2 ||x||_2: the constant ||1_n||_2 = sqrt(sum_{i<=n} 1)."""
    i = sympy.Symbol("i", positive=True, integer=True)
    return sympy.sqrt(sympy.summation(1, (i, 1, n)))


def _lemma2_C() -> sympy.Expr:
    """Lemma 2's constant C of (30), from its named formula (the chain cites the lemma)."""
    return next(f for f in LEMMA2.formulas if f.name == "C").parse()


@lru_cache(maxsize=1)
def lemma8_chain() -> dict:
    """The bounds the proofs of Lemmas 8 and 9 give, as sympy expressions in the formulas' symbols,
    with the chain's constants (each named for its step)."""
    H = SIZE["H"]
    g, a, Zb, An, dQh, dQ, dak = (sympy.Symbol(n, positive=True) for n in
                                  ("gamma", "alpha", "Zbar_norm", "A_norm", "dQ_h", "dQ", "dalpha_k"))
    l2_l1 = _l2_over_l1()                 # ||x||_2 <= ||x||_1, second line of (46)
    C = _lemma2_C()                       # Lemma 2 (30), third line of (46)
    tok = _bilinear_over_frobenius()      # |v_j^T (Q_h - Q_h') v_k| <= ||Q_h - Q_h'||_F, last line of (46)
    s_lip = l2_l1 * C * tok               # (46): ||s_k^h(theta) - s_k^h(theta')||_2 <= s_lip ||Q_h - Q_h'||_F
    s_norm = l2_l1 * _softmax_l1()        # ||s_k^h||_2 <= ||s_k^h||_1 = 1
    cs_H = _cauchy_schwarz(H)             # sum_h x_h <= sqrt(H) (sum_h x_h^2)^{1/2}
    sum_H = sympy.summation(1, (sympy.Symbol("h", positive=True, integer=True), 1, H))
    return {
        "s_lip": s_lip, "s_norm": s_norm,
        # (50): b_k^h = Zbar s_k^h, so ||b - b'||_2 <= ||Zbar||_2 ||s - s'||_2 and (46)
        "b_lip": Zb * s_lip * dQh,
        # (51): the two sums of the proof, |alpha_hk| <= alpha and (46) in the first,
        # ||s'||_2 <= 1 in the second, then Cauchy-Schwarz over h in both
        "delta_lip": g * a * s_lip * cs_H * dQ + g * s_norm * cs_H * dak,
        # (52), (53) (Lemma 9): ||b_k^h|| <= ||Zbar|| ||s||_2, ||delta_k|| <= gamma sum_h |alpha_hk| ||s||_2 + ||A e_k||
        "b_bound": Zb * s_norm, "delta_bound": g * sum_H * a * s_norm + An,
        "constants": {"l2_over_l1": l2_l1, "lemma2_C": C, "unit_tokens_bilinear": tok,
                      "softmax_l1": _softmax_l1(), "cauchy_schwarz_H": cs_H},
    }


def _chain_findings(ctx: Context, derived: Mapping[str, sympy.Expr], names: Sequence[str],
                    tag: str, where: Mapping[str, str], admits: Admits | None = None
                    ) -> list[Finding]:
    """One proof finding per formula: is the printed bound >= the chain's bound at every positive
    point?  It says whether the proof (the step ``where[name]``) establishes the printed bound,
    not whether the bound is true (the numeric tiers test that)."""
    rng = ctx.rng(tag)
    findings = []
    for name in names:
        paper = sympy.sympify(ctx.formulas[name])
        ok, ce = _ratio_at_least_one(paper / derived[name], rng, admits)
        ev = {"derived_bound": str(derived[name]), "paper_bound": str(paper)}
        if not ok and ce and "at" in ce:   # the first point found may be barely below; show the worst
            ce = {**ce, "smallest_ratio_found": _smallest_ratio(paper / derived[name], rng,
                                                                admits=admits)}
        low = (ce or {}).get("smallest_ratio_found", {}).get("ratio_float", (ce or {}).get("ratio_float"))
        margin = _proof_margin(paper / derived[name], ctx.rng(tag + "-margin"),
                               (ce or {}).get("smallest_ratio_found"), admits)
        findings.append(Finding(name, ok, ev, None if ok else {**ev, **(ce or {})},
                                "" if ok else f"{name} is below the bound the proof {where[name]} gives "
                                              f"at a positive point" + (f" (paper / proof = {low:.3g})"
                                                                        if low is not None else ""),
                                margin, proof_step=where[name]))
    return findings


def lemma8_symbolic(ctx: Context) -> TierResult:
    ch = lemma8_chain()
    findings = _chain_findings(ctx, ch, ("b_lip", "delta_lip"), "lemma8-symbolic",
                               {"b_lip": "(46)", "delta_lip": "(51)"})
    c = ch["constants"]
    lx = sympy.latex
    steps = [
        step("Softmax (46)", r"\|s_k^h-s_k^{h\prime}\|_2\le\|s_k^h-s_k^{h\prime}\|_1\le C\max_j|v_j^\top(Q_h-Q_h')v_k|"
             r"\le " + lx(ch["s_lip"]) + r"\,\|Q_h-Q_h'\|_F",
             f"||x||_2 <= {c['l2_over_l1']} ||x||_1 (the expansion of (sum |x_i|)^2); C = {c['lemma2_C']} from "
             f"Lemma 2's formula C (30); |v_j^T M v_k| <= {c['unit_tokens_bilinear']} ||M||_F by Cauchy-Schwarz "
             f"on vec(M), vec(v_j v_k^T) with unit tokens."),
        step("(50)", r"\|b_k^h-b_k^{h\prime}\|_2\le\|\bar Z\|_2\|s_k^h-s_k^{h\prime}\|_2\le " + lx(ch["b_lip"]),
             "b_k^h = Zbar s_k^h."),
        step("(51)", r"\|\delta_k-\delta_k'\|_2\le\gamma\sum_h|\alpha_{h,k}|\|s_k^h-s_k^{h\prime}\|_2+\gamma\sum_h"
             r"|\alpha_{h,k}-\alpha_{h,k}'|\|s_k^{h\prime}\|_2\le " + lx(ch["delta_lip"]),
             f"|alpha_hk| <= alpha and (46) in the first sum; ||s||_2 <= ||s||_1 = {c['softmax_l1']} in the "
             f"second; Cauchy-Schwarz over the H heads gives {c['cauchy_schwarz_H']} in both."),
    ]
    return combine(findings, {"chain_constants": {k: str(v) for k, v in c.items()}}, steps=steps)


LEMMA8 = Claim(
    id="yang2024.lemma8",
    title="Lipschitzness of b_k^h and delta_k (Lemma 8, eqs. (50), (51))",
    paper=PAPER,
    statement=(r"$\|b_k^h(\theta)-b_k^h(\theta')\|_2\le2\|\bar Z\|_2\|Q_h-Q_h'\|_F$ and "
               r"$\|\delta_k^\theta-\delta_k^{\theta'}\|_2\le2\gamma\sqrt H\alpha(\sum_h\|Q_h-Q_h'\|_F^2)^{1/2}"
               r"+\gamma\sqrt H\|\alpha_k-\alpha_k'\|_2$ when $|\alpha_{h,k}|,|\alpha'_{h,k}|\le\alpha$."),
    assumptions=("unit-norm tokens",),
    formulas=LEMMA8_FORMULAS,
    checks={"symbolic": lemma8_symbolic, "numeric": small_threads(lambda ctx: _bounds_numeric(ctx, "lemma8"))},
    setting=SETTING,
)

LEMMA9 = Claim(
    id="yang2024.lemma9",
    title="Norm bounds on b_k^h and delta_k (Lemma 9, eqs. (52), (53))",
    paper=PAPER,
    statement=r"$\|b_k^h\|_2\le\|\bar Z\|_2$ and $\|\delta_k^\theta\|_2\le\gamma H\alpha+\|A\|_2$.",
    assumptions=("|alpha_{h,k}| <= alpha",),
    formulas=LEMMA9_FORMULAS,
    checks={"numeric": small_threads(lambda ctx: _bounds_numeric(ctx, "lemma9"))},
    setting=SETTING,
)


# ==============================================================================================
# Lemma 10: smoothness of the loss, L of eq. (61)
# ==============================================================================================
L61_TEXT = ("2*((1/K)*(2*gamma*Zbar_norm**2*(2*gamma*H*alpha + A_norm))**2 + gamma**4/K**2*H**2*Zbar_norm**4)"
            " + 8*gamma*fbar_max*Zbar_norm*Max(1, (2*sqrt(K)*alpha)**2)*((alpha*gamma*H)**2"
            " + 4*N*(alpha*gamma*H + A_norm)**2)")
L61_CORRECTED = ("2*((1/K)*(2*gamma*Zbar_norm**2*(2*gamma*H*alpha + A_norm))**2 + gamma**4/K**2*H**2*Zbar_norm**4)"
                 " + 16*gamma**2*fbar_max**2*Zbar_norm**2/K*Max(1, (2*sqrt(K)*alpha)**2)*((alpha*gamma*H)**2"
                 " + 4*N*(alpha*gamma*H + A_norm)**2)")
LEMMA10_FORMULAS = (
    NamedFormula("L_sq", L61_TEXT, (_gam, _alp, _H, _K, _N, _Zbn, _fbar, _An), equation="(61)",
                 description="L^2, the square of the smoothness constant of l in xi", weaker="larger",
                 proof=lambda: lemma10_chain()["L_sq"]),
)
LEMMA10_SIZES = {"quick": {"K": 6, "d": 3, "m": 2, "N": 3, "H": 3},
                 "default": {"K": 8, "d": 3, "m": 2, "N": 3, "H": 4},
                 "paper": {"K": 10, "d": 4, "m": 3, "N": 4, "H": 6}}


def _ell_flat(dyn: Dynamics, gamma: float):
    inst = dyn.inst
    nQ = inst.H * inst.d * inst.d

    def ell(xi: torch.Tensor) -> torch.Tensor:
        Q = xi[:nQ].reshape(inst.H, inst.d, inst.d)
        al = xi[nQ:].reshape(inst.H, inst.K)
        return dyn.excess(Q, gamma * al)

    return ell, nQ


def _lemma10_point(dyn, gamma, alpha, gen, q_scale):
    inst = dyn.inst
    Q = q_scale * randn(inst.H, inst.d, inst.d, generator=gen, dtype=torch.float64)
    signs = torch.sign(randn(inst.H, inst.K, generator=gen, dtype=torch.float64))
    return torch.cat([Q.reshape(-1), (0.9 * alpha * signs).reshape(-1)])


def _explicit_pair(ell, xi, v, alpha, nQ, L):
    """xi' = xi + t v along the top Hessian direction; both stay in |alpha_hk| <= alpha."""
    grad = torch.func.grad(ell)
    g0 = grad(xi)
    best = None
    for t in (1e-4, 1e-5, 1e-6):
        step_ = t * max(1.0, float(xi.abs().max())) * v
        if float((xi[nQ:] + step_[nQ:]).abs().max()) > alpha:
            continue
        xi2 = xi + step_
        ratio = float((grad(xi2) - g0).norm() / step_.norm())
        if best is None or ratio > best["ratio"]:
            best = {"t": t, "ratio": ratio, "L": L, "ratio_over_L": ratio / L}
    return best


@lru_cache(maxsize=8)
def _lemma10_search(seed: int, sizes: tuple, starts: int) -> dict:
    """The Hessian search of Lemma 10 at every (gamma, alpha) of the grids: formula-free, so it is
    computed once per instance and shared by every formula checked against it (mutants included).

    Returns the instance data, zeta_0, Delta_0, gamma*alpha of (44) and per grid point the largest
    |Hessian eigenvalue| found with its point and eigenvector."""
    from torch.func import hessian

    sizes = dict(sizes)
    gen_d = torch.Generator().manual_seed(seed)
    inst = Instance(sizes, BUDGET_TAU["quick"], random_dictionary(sizes["K"], sizes["d"], sizes["m"],
                                                                   sizes["N"], gen_d), seed)
    dyn = dynamics(inst)
    gen = torch.Generator().manual_seed(seed)
    # the alpha of (44) at a Gaussian initialisation with w = 0
    Q0 = init_Q(inst, gen)
    zeta0 = dyn.zeta(Q0)
    delta0 = float(dyn.excess(Q0, torch.zeros(inst.H, inst.K, dtype=torch.float64)))
    c44 = 4 * math.sqrt(2 * inst.K) * dyn.Zbar_norm * math.sqrt(delta0) / zeta0   # gamma * alpha of (44)
    generic = [(1.0, 1.0), (10.0, 1.0), (1e2, 10.0), (1e4, 1e2), (1e5, 1e2), (1e6, 1e3), (1e7, 1e4)]
    reading44 = [(g, c44 / g) for g in (1e2, 1e4, 1e5, 1e6, 1e7)]
    grids = {}
    for label, grid in (("generic_alpha", generic), ("alpha_of_44", reading44)):
        rows = []
        for gamma, alpha in grid:
            ell, nQ = _ell_flat(dyn, gamma)
            best = (0.0, None, None)
            for s in range(starts):
                xi = _lemma10_point(dyn, gamma, alpha, gen, (0.0, 1.0, 2.0, 0.5, 3.0, 1.5, 0.25, 5.0)[s])
                evals, evecs = torch.linalg.eigh(hessian(ell)(xi))
                i = int(evals.abs().argmax())
                if float(evals[i].abs()) > best[0]:
                    best = (float(evals[i].abs()), xi, evecs[:, i])
            rows.append((gamma, alpha) + best)
        grids[label] = rows
    return {"inst": inst, "dyn": dyn, "zeta0": zeta0, "delta0": delta0, "c44": c44, "grids": grids}


def lemma10_numeric(ctx: Context) -> TierResult:
    F = ctx.formulas["L_sq"]
    sizes = LEMMA10_SIZES[ctx.budget.name]
    starts = {"quick": 3, "default": 5}.get(ctx.budget.name, 8)
    search = _lemma10_search(ctx.seed_for("lemma10"), tuple(sorted(sizes.items())), starts)
    inst, dyn, zeta0, delta0, c44 = (search[k] for k in ("inst", "dyn", "zeta0", "delta0", "c44"))

    def L_of(gamma, alpha):
        v = float_value(F, {"gamma": gamma, "alpha": alpha, "H": inst.H, "K": inst.K, "N": inst.N,
                            "Zbar_norm": dyn.Zbar_norm, "fbar_max": dyn.fbar_max, "A_norm": dyn.A_norm})
        return math.sqrt(v)

    rows = {"generic_alpha": [], "alpha_of_44": []}
    worst = None
    for label, grid in search["grids"].items():
        for gamma, alpha, top, xi, v in grid:
            L = L_of(gamma, alpha)
            row = {"gamma": gamma, "alpha": alpha, "max_abs_hessian_eigenvalue": top, "L": L,
                   "ratio": top / L}
            rows[label].append(row)
            if top > L and label == "generic_alpha" and worst is None:
                ell, nQ = _ell_flat(dyn, gamma)
                pair = _explicit_pair(ell, xi, v, alpha, nQ, L)
                if pair is not None and pair["ratio"] > L:
                    worst = {"instance": inst.as_dict(), "gamma": gamma, "alpha": alpha,
                             "xi": "Q at the search point, alpha_hk = +-0.9 alpha",
                             "gradient_lipschitz_ratio": pair["ratio"], "paper_L": L,
                             "ratio_over_L": pair["ratio_over_L"], "step": pair["t"], "seed": ctx.seed}
    ok = worst is None
    top = max(rows["generic_alpha"], key=lambda r: r["ratio"])
    evidence = {"search": f"{starts} points per (gamma, alpha), Q at several scales, |alpha_hk| = 0.9 "
                          f"alpha; sup of the gradient's Lipschitz ratio = sup of |Hessian eigenvalues|",
                "zeta0": zeta0, "Delta0": delta0, "gamma_alpha_of_44": c44,
                "max_ratio_generic": top["ratio"],
                "max_ratio_alpha_of_44": max(r["ratio"] for r in rows["alpha_of_44"]), **rows}
    findings = [Finding("smoothness_bound", ok, evidence, worst,
                        "" if ok else f"at gamma = {worst['gamma']:g}, alpha = {worst['alpha']:g} the "
                                      f"gradient changes {worst['ratio_over_L']:.3g} times faster than L "
                                      f"of (61) allows",
                        _worst_margin("the largest |Hessian eigenvalue| found over L of (61)", top["ratio"],
                                      {"gamma": top["gamma"], "alpha": top["alpha"]}),
                        search=True)]
    return combine(findings, {"instance": inst.as_dict()})


def _young(l: int) -> sympy.Expr:
    """Lemma 3 (31): ||sum_{i<=l} x_i||^2 <= l sum ||x_i||^2, the square of Cauchy-Schwarz's sqrt(l)."""
    return _cauchy_schwarz(sympy.Integer(l)) ** 2


@lru_cache(maxsize=1)
def lemma10_chain() -> dict:
    """L^2 as the proof of Lemma 10 builds it from (54)-(59), on the bounds of Lemmas 8, 9 as their
    proofs give them (``lemma8_chain``).  Each part is the coefficient of a norm of xi - xi'."""
    ch = lemma8_chain()
    K, N, H = SIZE["K"], SIZE["N"], SIZE["H"]
    g, a, Zb, fb, dQ, dak = (sympy.Symbol(n, positive=True) for n in
                             ("gamma", "alpha", "Zbar_norm", "fbar_max", "dQ", "dalpha_k"))
    k = sympy.Symbol("k", positive=True, integer=True)
    sum_K = sympy.summation(1, (k, 1, K))
    coeff = lambda expr, var: sympy.expand(expr).coeff(var)      # noqa: E731  (linear in var)
    s_lip = ch["s_lip"]
    b_bound, d_bound = ch["b_bound"], ch["delta_bound"]
    dl_Q, dl_a = coeff(ch["delta_lip"], dQ), coeff(ch["delta_lip"], dak)     # (51)
    b_lip = coeff(ch["b_lip"], sympy.Symbol("dQ_h", positive=True))          # (50)
    BF = sympy.sqrt(H * b_bound ** 2)                  # ||B_k'||_F <= sqrt(H) max_h ||b_k^h|| (52)
    dB = b_lip                                         # ||B_k - B_k'||_F <= b_lip (sum_h ||dQ_h||^2)^{1/2} (50)
    # (54): (gamma/K)||Zbar|| (||B_k - B_k'||_F ||delta_k|| + ||B_k'||_F ||delta_k - delta_k'||)
    aQ = g / K * Zb * (dB * d_bound + BF * dl_Q)       # coefficient of dQ
    aA = g / K * Zb * BF * dl_a                        # coefficient of ||alpha_k - alpha_k'||
    # (55): Young (l = 2) on the two terms, summed over k; x dQ^2 + y ||dalpha||^2 <= (x + y)||dxi||^2
    c55 = _young(2) * sum_K * aQ ** 2 + _young(2) * aA ** 2
    # (56)-(57): |(Zbar delta_k)^T zbar_j| <= ||Zbar|| ||delta_k|| fbar_max and ||(v_j - v_i) v_k^T||_F
    # <= (||v_j|| + ||v_i||) ||v_k|| (the 2 of (83)); four product-rule terms
    c83 = (UNIT + UNIT) * UNIT
    P = c83 * g * fb * Zb / K
    sm1 = _softmax_l1()                                # sum_j s_jk = sum_i s_ik = 1
    cs_K, cs_N = _cauchy_schwarz(K), _cauchy_schwarz(N)
    # (58): the four terms after summing over k, as coefficients of dQ, ||dalpha||_F,
    # ||dalpha_{h,:}||_2 and ||dQ_h||_F
    T1 = a * sm1 * sm1 * sum_K * dl_Q                  # alpha sum_k ||delta - delta'||: dQ part of (51)
    T2 = a * sm1 * sm1 * dl_a * cs_K                   # ... its dalpha_k part, sum_k <= sqrt(K) ||.||_F
    T3 = d_bound * sm1 * sm1 * cs_K                    # ||delta_k'|| |alpha_hk - alpha_hk'|, (53)
    # ||delta_k'|| alpha (||s - s'||_1 sum_i s_ik + sum_j s'_jk ||s - s'||_1), ||.||_1 <= sqrt(N) ||.||_2, (46)
    T4 = d_bound * a * (sm1 + sm1) * cs_N * s_lip * sum_K
    # (59): Young (l = 4) on the four terms, summed over h: sum_h dQ^2 = H dQ^2, sum_h ||dQ_h||^2 = dQ^2,
    # sum_h ||dalpha||_F^2 = H ||dalpha||_F^2, sum_h ||dalpha_{h,:}||^2 = ||dalpha||_F^2
    cQ = _young(4) * P ** 2 * (H * T1 ** 2 + T4 ** 2)
    cA = _young(4) * P ** 2 * (H * T2 ** 2 + T3 ** 2)
    # x dQ^2 + y ||dalpha||^2 <= max(x, y) ||dxi||^2 (the proof then also bounds
    # (alpha gamma H)^2 + (alpha gamma H + ||A||)^2 by the dQ bracket, a looser max)
    c59 = sympy.Max(cQ, cA)
    # (60): ||grad l - grad l'||^2 = ||grad_alpha||^2 + sum_h ||grad_Q_h||^2
    return {"aQ": aQ, "aA": aA, "c55": c55, "P": P, "T": (T1, T2, T3, T4), "cQ": cQ, "cA": cA,
            "c59": c59, "L_sq": c55 + c59}


def lemma10_symbolic(ctx: Context) -> TierResult:
    ch = lemma10_chain()
    findings = _chain_findings(ctx, ch, ("L_sq",), "lemma10-symbolic", {"L_sq": "(54)-(59)"})
    lx = lambda e: sympy.latex(sympy.factor(e))       # noqa: E731
    T1, T2, T3, T4 = ch["T"]
    steps = [
        step("(54)", r"\|\nabla_{\alpha_k}\ell-\nabla_{\alpha_k}\ell'\|_2\le " + lx(ch["aQ"]) + r"\,\|\Delta Q\|+"
             + lx(ch["aA"]) + r"\,\|\alpha_k-\alpha_k'\|_2",
             "(45); ||B_k - B_k'||_F by (50), ||B_k'||_F <= sqrt(H) ||Zbar|| by (52), ||delta_k|| by (53), "
             "||delta_k - delta_k'|| by (51), all as their proofs give them."),
        step("(55)", r"\|\nabla_\alpha\ell-\nabla_\alpha\ell'\|_F^2\le " + lx(ch["c55"]) + r"\,\|\xi-\xi'\|_2^2",
             "Young's inequality (Lemma 3, l = 2), summed over the K tokens."),
        step("(57)-(58)", r"\|\nabla_{Q_h}\ell-\nabla_{Q_h}\ell'\|_F\le " + lx(ch["P"]) + r"\Big(" + lx(T1)
             + r"\|\Delta Q\|+" + lx(T2) + r"\|\Delta\alpha\|_F+" + lx(T3) + r"\|\Delta\alpha_{h,:}\|_2+" + lx(T4)
             + r"\|\Delta Q_h\|_F\Big)",
             "(56) with |(Zbar delta)^T zbar_j| <= ||Zbar|| ||delta|| fbar_max and the 2 of (83); the product "
             "rule gives four terms; sum_j s_jk = 1, Cauchy-Schwarz over k (sqrt(K)) and over j (sqrt(N)), "
             "(46) for ||s - s'||_2, Lemmas 8, 9 for delta."),
        step("(59)", r"\sum_h\|\nabla_{Q_h}\ell-\nabla_{Q_h}\ell'\|_F^2\le\max\Big\{" + lx(ch["cQ"]) + r",\ "
             + lx(ch["cA"]) + r"\Big\}\|\xi-\xi'\|_2^2",
             "Young's inequality (l = 4) squares the whole of (58), the prefactor included (the printed "
             "(59) keeps it to the first power), summed over the H heads."),
        step("(61)", r"L^2 = " + sympy.latex(ch["L_sq"]), "(55) + (59)."),
    ]
    return combine(findings, steps=steps)


LEMMA10 = Claim(
    id="yang2024.lemma10",
    title="Smoothness of the loss (Lemma 10, eqs. (60), (61))",
    paper=PAPER,
    statement=(r"For all $\xi,\xi'$ with $\max\{|\alpha_{h,k}|,|\alpha'_{h,k}|\}\le\alpha$: "
               r"$\|\nabla_\xi\ell(\xi)-\nabla_\xi\ell(\xi')\|_2\le L\|\xi-\xi'\|_2$ with $L$ of (61)."),
    assumptions=("gamma = sqrt(eta_w / eta_Q) > 0 and alpha > 0 arbitrary (the statement's "
                 "quantifiers); also reported: alpha of (44)",),
    formulas=LEMMA10_FORMULAS,
    checks={"symbolic": lemma10_symbolic, "numeric": small_threads(lemma10_numeric)},
    setting=SETTING,
    correction=Correction(
        description="second term of (61): 16 (gamma fbar_max ||Zbar||)^2 / K max{1, 4 K alpha^2}[...] "
                    "instead of 8 gamma fbar_max ||Zbar|| max{1, 4 K alpha^2}[...]",
        reason="(59) squares the right side of (58) but keeps (gamma fbar ||Zbar|| / K) to the first "
               "power; squaring it and Young's inequality over the four terms of (58) gives the factor "
               "16 (gamma fbar ||Zbar||)^2 / K^2 (times K for the max)",
        formulas={"L_sq": L61_CORRECTED}),
)


# ==============================================================================================
# Theorem 1: linear convergence of GD with the learning rates (15)-(17)
# ==============================================================================================
_z0 = FormulaSymbol("zeta_0", positive=True)
_D0 = FormulaSymbol("Delta_0", positive=True)
_ZZn = FormulaSymbol("ZtZhat_norm", positive=True)
THM1_FORMULAS = (
    NamedFormula("gamma_min", "zeta_0**(-5/4)*(128*sqrt(2)/(sqrt(2) - 1)*Zbar_norm**2*sqrt(H)*fbar_max"
                              "*K**(3/2)*Delta_0)**(1/2)",
                 (_z0, _D0, _Zbn, _fbar, _H, _K), equation="(15)", description="the least admissible gamma",
                 weaker="larger"),
    NamedFormula("eta_w", "gamma**2*eta_Q", (_gam, _etaQ), equation="(16)",
                 description="the learning rate of the w_h"),
    NamedFormula("L_sq", "(8*sqrt(2)*H*sqrt(K)*Zbar_norm**2/zeta_0*sqrt(Delta_0) + 1 + ZtZhat_norm/(m*tau))**2"
                         "*Zbar_norm**4*(8/K*gamma**2 + 4096/(gamma*zeta_0**2)*K**2*N*Delta_0)"
                         " + 2*H**2*Zbar_norm**4*(gamma**4/K**2 + 16384/(gamma*zeta_0**4)*K**3*Zbar_norm**2"
                         "*Delta_0**2)",
                 (_H, _K, _N, _m, _tau, _Zbn, _z0, _D0, _ZZn, _gam), equation="(17)",
                 description="L^2; eta_Q <= 1/L", weaker="larger", proof=lambda: thm1_L_sq_chain()),
    NamedFormula("rate", "1 - eta_w*zeta_0/(2*K)", (_etaw, _z0, _K), equation="(18)",
                 description="the contraction factor of L - inf L per step", weaker="larger"),
)


@lru_cache(maxsize=64)
def _simplified(ratio: sympy.Expr) -> sympy.Expr:
    """sympy.simplify, once per ratio: the probe and the margin of a chain both need it, and it is
    most of their cost (seconds for Thm 1's L^2)."""
    return sympy.simplify(ratio)


def _ratio_at_least_one(ratio: sympy.Expr, rng: np.random.Generator,
                        admits: Admits | None = None) -> tuple[bool, dict | None]:
    """Is ratio >= 1 for all positive values of its symbols?  Exact when constant, else probed at
    200 points spread over 12 orders of magnitude; a point with ratio < 1 is confirmed at the same
    rational point in 60-digit arithmetic (ratio < 1 - 10^-40)."""
    ratio = _simplified(ratio)
    if not ratio.free_symbols:
        if ratio.is_extended_real is False:  # a bound that is not a real number bounds nothing
            return False, {"ratio": str(ratio), "not_a_real_number": True}
        return bool(ratio >= 1), None if ratio >= 1 else {"ratio": str(ratio)}
    syms = sorted(ratio.free_symbols, key=str)
    f = sympy.lambdify(syms, ratio, "math")
    for _ in range(200):
        point = _probe_point(syms, rng, admits)
        if point is None:
            break
        try:
            val = f(*[point[s] for s in syms])
        except (OverflowError, ZeroDivisionError):
            continue
        except ValueError:  # a math domain error: the square root of a negative number, say
            v = complex(ratio.subs(point).evalf(30))
            if abs(v.imag) > 1e-12 * abs(v):
                return False, {"at": {str(k): str(x) for k, x in point.items()}, "ratio": str(v),
                               "not_a_real_number": True}
            continue
        if val < 1 - 1e-12:
            exact, r = _at_60_digits(ratio, syms, point)
            if r < 1 - 1e-40:
                return False, {"at": {str(k): str(v) for k, v in exact.items()},
                               "ratio": str(sympy.Float(r, 30)), "ratio_float": float(r)}
    return True, None


Admits = Callable[[dict], bool]  # a claim's hypotheses on a probe point ({name: value})


def _probe_point(syms: list, rng: np.random.Generator, admits: Admits | None = None,
                 tries: int = 100) -> dict | None:
    """A point of the probe grid: each symbol 10^{-6, -2, 0, 2, 6} times a factor in [0.5, 2],
    integer symbols rounded (at least 1); with ``admits``, a point that meets the claim's
    hypotheses (None if ``tries`` draws found none: a bound is never probed outside them)."""
    for _ in range(tries):
        point = {s: float(rng.choice([1e-6, 1e-2, 1.0, 1e2, 1e6])) * float(rng.uniform(0.5, 2.0))
                 for s in syms}
        point.update({s: float(max(1, round(point[s]))) for s in syms if s.is_integer})
        if admits is None or admits({str(k): v for k, v in point.items()}):
            return point
    return None


def _at_60_digits(ratio: sympy.Expr, syms: list, point: dict) -> tuple[dict, Any]:
    """ratio at the rational point nearest ``point`` (denominators <= 10^12), in 60-digit mpmath
    arithmetic (sympy's exact comparison of nested radicals inside Max can take minutes)."""
    import mpmath

    exact = {s: sympy.Rational(v).limit_denominator(10 ** 12) for s, v in point.items()}
    g = sympy.lambdify(syms, ratio, "mpmath")
    with mpmath.workdps(60):
        return exact, g(*[mpmath.mpf(exact[s].p) / exact[s].q for s in syms])


def _smallest_ratio(ratio: sympy.Expr, rng: np.random.Generator, count: int = 400,
                    admits: Admits | None = None) -> dict:
    """The smallest value of ratio found at count points of _ratio_at_least_one's grid (60
    digits), among the points the claim's hypotheses ``admits``."""
    syms = sorted(ratio.free_symbols, key=str)
    f = sympy.lambdify(syms, ratio, "math")
    best = None
    for _ in range(count):
        point = _probe_point(syms, rng, admits)
        if point is None:
            break
        try:
            val = f(*[point[s] for s in syms])
        except (OverflowError, ZeroDivisionError, ValueError):
            continue
        if best is None or val < best[0]:
            best = (val, point)
    if best is None:
        return {}
    exact, r = _at_60_digits(ratio, syms, best[1])
    return {"at": {str(k): str(v) for k, v in exact.items()}, "ratio_float": float(r)}


def _in_symbols_of(expr: sympy.Expr, other: sympy.Expr) -> sympy.Expr:
    """expr with each free symbol replaced by the symbol of the same name in other (assumptions
    differ between the derivations' symbols and the formulas')."""
    by_name = {s.name: s for s in other.free_symbols}
    return expr.xreplace({s: by_name[s.name] for s in expr.free_symbols if s.name in by_name})


def _alpha44(gamma, zeta0, Zbar, Delta0) -> sympy.Expr:
    """alpha of (44): sqrt(2K) 4 ||Zbar||_2 / (gamma zeta_0) sqrt(L(theta^(0)) - L*)."""
    return sympy.sqrt(2 * SIZE["K"]) * 4 * Zbar / (gamma * zeta0) * sympy.sqrt(Delta0)


@lru_cache(maxsize=1)
def thm1_L_sq_chain() -> sympy.Expr:
    """L^2 of (17) as the proof of Theorem 1 obtains it: Lemma 10's L^2 as the proof of Lemma 10
    builds it (``lemma10_chain``) at the alpha of (44), with ||A||_2 <= 1 + ||Z^T Zhat||_2 / (m tau)
    (A of (34): ||(Z^T Z + m tau I)^{-1}||_2 <= 1/(m tau), ||(Z^T Zhat, (m tau I, 0))||_2 <=
    ||Z^T Zhat||_2 + m tau) and fbar_max <= ||Zbar||_2 (a column's norm is at most the operator norm).
    The chain is a Max of polynomials with non-negative coefficients in ||A||_2 and fbar_max, so the
    substitutions keep it an upper bound."""
    P = lambda n: sympy.Symbol(n, positive=True)             # noqa: E731
    g, a, Zb, fb, An, D0, z0, ZZ, tau = (P(n) for n in ("gamma", "alpha", "Zbar_norm", "fbar_max", "A_norm",
                                                         "Delta_0", "zeta_0", "ZtZhat_norm", "tau"))
    m = SIZE["m"]
    return lemma10_chain()["L_sq"].subs({a: _alpha44(g, z0, Zb, D0), An: 1 + ZZ / (m * tau), fb: Zb})


def _thm1_hypotheses(gamma_min: sympy.Expr) -> Admits:
    """Theorem 1's hypotheses on a probe point: N <= K (a prompt holds N of the K tokens), H >= N
    (Assumption 2 needs it, Prop. 1) and gamma >= (15), where the point fixes these symbols."""
    names = sorted(str(x) for x in gamma_min.free_symbols)
    g_min = sympy.lambdify([sympy.Symbol(n) for n in names],
                           gamma_min.xreplace({x: sympy.Symbol(str(x)) for x in gamma_min.free_symbols}),
                           "math")

    def admits(point: dict) -> bool:
        if "N" in point and ("K" in point and point["N"] > point["K"]
                             or "H" in point and point["H"] < point["N"]):
            return False
        if "gamma" in point and all(n in point for n in names):
            try:
                return point["gamma"] >= g_min(*[point[n] for n in names])
            except (ValueError, OverflowError, ZeroDivisionError):
                return False
        return True
    return admits


def thm1_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    g, eta, z0, D0, Zb, fb, a, sig, x = sympy.symbols("gamma eta_Q zeta_0 Delta_0 Zbar_norm fbar_max "
                                                      "alpha sigma x", positive=True)
    K, H = SIZE["K"], SIZE["H"]
    names = {"gamma", "eta_Q", "eta_w", "zeta_0", "Delta_0", "Zbar_norm", "fbar_max", "ZtZhat_norm", "tau"}

    def ours(expr):  # the formula's symbols -> the derivation's symbols
        return sympy.sympify(expr).subs({sympy.Symbol(n, positive=True): sympy.Symbol(n, positive=True)
                                         for n in names})

    sigma44 = z0 * g ** 2 / K
    alpha44 = _alpha44(g, z0, Zb, D0)
    # geometric sum of (43c): sum_s (1 - x)^{s/2} <= 1/(1 - sqrt(1 - x)) <= 2/x, x = eta sigma / 2
    geo_ok = sympy.expand((1 - x / 2) ** 2 - (1 - x)) == x ** 2 / 4
    c7 = 2 * sympy.sqrt(2)                                       # Lemma 7
    drift_Q = c7 * eta * g * alpha44 * fb * sympy.sqrt(D0) * 2 / (eta * sigma44 / 2)      # (47)
    drift_B = 2 * Zb * sympy.sqrt(H) * drift_Q                                              # (48)
    need = (1 - 1 / sympy.sqrt(2)) * sympy.sqrt(z0)
    gamma_derived = sympy.sqrt(sympy.simplify(drift_B * g ** 2 / need))   # drift_B ~ 1/gamma^2
    rng = ctx.rng("thm1-symbolic")
    ok_g, ce_g = _ratio_at_least_one(ours(F["gamma_min"]) / gamma_derived, rng)
    findings = [Finding("gamma_min_from_the_proof", ok_g and geo_ok, {
        "derived_gamma_min": str(sympy.simplify(gamma_derived)), "paper": ctx.formula_texts["gamma_min"],
        "geometric_sum_bound_4_over_eta_sigma": geo_ok},
        None if ok_g else {"derived": str(gamma_derived), "paper": ctx.formula_texts["gamma_min"], **(ce_g or {})},
        "" if ok_g else "(15) is smaller than what (48) needs: the drift of B_k is not controlled",
        _proof_margin(ours(F["gamma_min"]) / gamma_derived, ctx.rng("thm1-symbolic-margin")),
        proof_step="(47)-(48)")]
    # (17): at least L^2 of Lemma 10 at alpha of (44), as the proofs build it
    paper_L = sympy.sympify(F["L_sq"])
    findings += _chain_findings(ctx, {"L_sq": _in_symbols_of(thm1_L_sq_chain(), paper_L)}, ("L_sq",),
                                "thm1-L", {"L_sq": "(54)-(59) of Lemma 10, at alpha of (44)"},
                                _thm1_hypotheses(F["gamma_min"]))
    # (16): eta_w = gamma^2 eta_Q from Lemma 6's gamma = sqrt(eta_w / eta_Q)
    ew = sympy.Symbol("eta_w", positive=True)
    eta_w_derived = sympy.solve(sympy.Eq(g, sympy.sqrt(ew / eta)), ew)[0]
    ok_e = sympy.simplify(ours(F["eta_w"]) - eta_w_derived) == 0
    findings.append(Finding("eta_w", ok_e, {"derived": str(eta_w_derived)},
                            None if ok_e else {"derived": str(eta_w_derived), "paper": ctx.formula_texts["eta_w"]},
                            "" if ok_e else "(16) is not gamma^2 eta_Q (Lemma 6)",
                            proof_step="(16), Lemma 6"))
    # (18): 1 - eta_Q sigma / 2 with sigma of (44), in terms of eta_w
    rate_derived = sympy.simplify((1 - eta * sigma44 / 2).subs(eta, ew / g ** 2))
    diff = sympy.simplify(ours(F["rate"]) - rate_derived)
    # a rate is an upper bound on the contraction: (18) follows when paper - derived >= 0 at every
    # positive point (a ratio test would flip where the derived rate is negative, eta sigma > 2)
    ok_r = diff == 0 or _ratio_at_least_one(1 + diff, rng)[0]
    findings.append(Finding("rate_from_the_proof", bool(ok_r), {"derived_rate": str(rate_derived),
                                                                "paper_minus_derived": str(diff)},
                            None if ok_r else {"derived": str(rate_derived), "paper": ctx.formula_texts["rate"]},
                            "" if ok_r else "(18) contracts faster than (43c) proves",
                            proof_step="(43c)"))
    steps = [
        step("Constants (44)", r"\sigma = \frac{\zeta_0\gamma^2}{K},\quad \alpha = \sqrt{2K}\frac{4\|\bar Z\|_2}"
             r"{\gamma\zeta_0}\sqrt{\Delta^{(0)}}", "as defined in the proof."),
        step("Drift of Q (47)", r"\|Q_h^{(t)}-Q_h^{(0)}\|_F \le 2\sqrt2\eta\gamma\alpha\bar f_{\max}\sqrt{\Delta^{(0)}}"
             r"\sum_s\big(1-\tfrac{\eta\sigma}2\big)^{s/2} \le \frac{8\sqrt2\gamma\alpha\bar f_{\max}}{\sigma}"
             r"\sqrt{\Delta^{(0)}}", "with 1/(1 - sqrt(1 - x)) <= 2/x, checked: (1 - x/2)^2 - (1 - x) = x^2/4."),
        step("Drift of B (48)", r"\|B_k^{(t)} - B_k^{(0)}\|_F \le " + sympy.latex(sympy.simplify(drift_B)) +
             r" \le (1-1/\sqrt2)\sqrt{\zeta_0}", "solved for gamma:"),
        step("Derived (15)", r"\gamma \ge " + sympy.latex(sympy.simplify(gamma_derived)), ""),
        step("(17)", r"L^2 \ge " + sympy.latex(sympy.simplify(thm1_L_sq_chain())),
             "Lemma 10's L^2 as its proof builds it ((54)-(59)) at alpha of (44), with ||A||_2 <= 1 + "
             "||Z^T Zhat||_2/(m tau) (A of (34)) and fbar_max <= ||Zbar||_2."),
        step("Rate", r"1 - \frac{\eta_Q\sigma}{2} = " + sympy.latex(rate_derived),
             "(43c) with eta_w = gamma^2 eta_Q."),
    ]
    return combine(findings, steps=steps)


@dataclass
class Run:
    ratios: list
    excess: list
    invariants: dict


_RUN_CACHE: dict = {}


def _gd_run(dyn: Dynamics, Q0: torch.Tensor, eta_Q: float, eta_w: float, rate: float, steps: int,
            zeta0: float, gamma: float | None = None, alpha44: float | None = None) -> Run:
    """GD (10) from (Q0, w = 0); ratios[t] = (L_t - L*) / (rate^t (L_0 - L*)).  The trajectory does
    not depend on ``rate``, so it is memoised (formulas that change only the rate share it)."""
    inst = dyn.inst
    key = (inst.seed, tuple(sorted(inst.sizes.items())), inst.tau, Q0.numpy().tobytes(), eta_Q, eta_w,
           steps, zeta0, gamma, alpha44)
    if key not in _RUN_CACHE:
        if len(_RUN_CACHE) > 256:
            _RUN_CACHE.clear()
        _RUN_CACHE[key] = _gd_trajectory(dyn, Q0, eta_Q, eta_w, steps, zeta0, gamma, alpha44)
    excess, inv = _RUN_CACHE[key]
    ratios = [1.0] + [ex / (rate ** t * excess[0]) for t, ex in enumerate(excess[1:], 1)]
    return Run(ratios, list(excess), dict(inv))


def _gd_trajectory(dyn: Dynamics, Q0: torch.Tensor, eta_Q: float, eta_w: float, steps: int,
                   zeta0: float, gamma: float | None, alpha44: float | None) -> tuple[list, dict]:
    inst = dyn.inst
    Q, w = Q0.clone(), torch.zeros(inst.H, inst.K, dtype=torch.float64)
    ex0, gQ, gw = _grads(dyn, Q, w)
    excess = [ex0]
    inv = {"min_zeta_over_zeta0": 1.0, "max_alpha_over_alpha44": 0.0, "min_PL_ratio": math.inf}
    for t in range(1, steps + 1):
        if gamma is not None:   # PL inequality (49) at the current point: ||grad_xi l||^2 >= sigma (l - L*)
            g2 = float((gQ ** 2).sum() + gamma ** 2 * (gw ** 2).sum())
            sigma = zeta0 * gamma ** 2 / inst.K
            inv["min_PL_ratio"] = min(inv["min_PL_ratio"], g2 / (sigma * excess[-1]))
        Q, w = Q - eta_Q * gQ, w - eta_w * gw
        ex, gQ, gw = _grads(dyn, Q, w)
        excess.append(ex)
        if not math.isfinite(ex):
            break
        if t % max(1, steps // 20) == 0 or t == steps:
            inv["min_zeta_over_zeta0"] = min(inv["min_zeta_over_zeta0"], dyn.zeta(Q) / zeta0)
            if gamma is not None and alpha44 is not None:
                inv["max_alpha_over_alpha44"] = max(inv["max_alpha_over_alpha44"],
                                                    float((w / gamma).norm(dim=1).max()) / alpha44)
    return excess, inv


def _thm1_constants(F, dyn: Dynamics, Q0: torch.Tensor) -> dict:
    inst = dyn.inst
    zeta0 = dyn.zeta(Q0)
    delta0 = float(dyn.excess(Q0, torch.zeros(inst.H, inst.K, dtype=torch.float64)))
    base = {"zeta_0": zeta0, "Delta_0": delta0, "Zbar_norm": dyn.Zbar_norm, "fbar_max": dyn.fbar_max,
            "ZtZhat_norm": dyn.ZtZhat_norm, "H": inst.H, "K": inst.K, "N": inst.N, "m": inst.m,
            "tau": inst.tau}
    gamma = float_value(F["gamma_min"], base)
    L = math.sqrt(float_value(F["L_sq"], {**base, "gamma": gamma}))
    eta_Q = 1.0 / L
    eta_w = float_value(F["eta_w"], {"gamma": gamma, "eta_Q": eta_Q})
    rate = float_value(F["rate"], {"eta_w": eta_w, "zeta_0": zeta0, "K": inst.K})
    alpha44 = 4 * math.sqrt(2 * inst.K) * dyn.Zbar_norm * math.sqrt(delta0) / (gamma * zeta0)
    L61 = math.sqrt(float_value(sympy.sympify(LEMMA10_FORMULAS[0].parse()), {
        "gamma": gamma, "alpha": alpha44, "H": inst.H, "K": inst.K, "N": inst.N,
        "Zbar_norm": dyn.Zbar_norm, "fbar_max": dyn.fbar_max, "A_norm": dyn.A_norm}))
    return {"zeta0": zeta0, "Delta0": delta0, "gamma": gamma, "L": L, "L_61": L61, "eta_Q": eta_Q,
            "eta_w": eta_w, "rate": rate, "alpha44": alpha44}


THM1_BUDGET = {"quick": (4, 150), "default": (12, 400), "paper": (10, 1000)}


def thm1_numeric(ctx: Context) -> TierResult:
    F = ctx.formulas
    instances, steps = THM1_BUDGET[ctx.budget.name]
    sizes = SETTING.resolve(ctx.budget.name, ctx.sizes)
    tol = 1e-9
    rows, worst, worst_ce, worst_at = [], 0.0, None, {}
    practical, bounds17 = [], []
    for r in range(instances):
        inst = make_instance(ctx, f"thm1-{r}", sizes)
        dyn = dynamics(inst)
        # the bounds the proof of (17) uses (thm1_L_sq_chain), at the instance
        bounds17.append({"instance": r, "A_norm": dyn.A_norm,
                         "one_plus_ZtZhat_over_m_tau": 1 + dyn.ZtZhat_norm / (inst.m * inst.tau),
                         "fbar_max": dyn.fbar_max, "Zbar_norm": dyn.Zbar_norm,
                         "holds": dyn.A_norm <= (1 + 1e-12) * (1 + dyn.ZtZhat_norm / (inst.m * inst.tau))
                         and dyn.fbar_max <= (1 + 1e-12) * dyn.Zbar_norm})
        gen = torch.Generator().manual_seed(ctx.seed_for("thm1-init", r))
        Q0 = init_Q(inst, gen)
        c = _thm1_constants(F, dyn, Q0)
        run = _gd_run(dyn, Q0, c["eta_Q"], c["eta_w"], c["rate"], steps, c["zeta0"], c["gamma"], c["alpha44"])
        rmax = max(run.ratios[1:])                      # t >= 1 (the ratio is 1 at t = 0)
        t_at = 1 + int(np.argmax(run.ratios[1:]))
        rows.append({"instance": r, **{k: c[k] for k in ("zeta0", "Delta0", "gamma", "eta_Q", "eta_w")},
                     "one_minus_rate": 1 - c["rate"], "L_17_over_L_61": c["L"] / c["L_61"],
                     "max_ratio_gap_over_bound": rmax, "final_gap_over_initial": run.excess[-1] / run.excess[0],
                     "guaranteed_final_factor": c["rate"] ** steps, **run.invariants})
        if rmax > worst:
            worst, worst_at = rmax, {"instance": r, "step": t_at}
            if rmax > 1 + tol:
                worst_ce = {"instance": inst.as_dict(), "step": t_at, "gap": run.excess[t_at],
                            "bound": c["rate"] ** t_at * run.excess[0], **{k: c[k] for k in ("eta_Q", "eta_w",
                                                                                         "rate", "gamma")},
                            "seed": ctx.seed}
        # practical learning rates: one rate for Q and w, 1/lambda_max of the Hessian at theta^(0)
        if r < 2:
            lam_max = _hessian_top(dyn, Q0)
            for factor in (1.0, 1.9):
                eta = factor / lam_max
                rate_p = float_value(F["rate"], {"eta_w": eta, "zeta_0": c["zeta0"], "K": inst.K})
                run_p = _gd_run(dyn, Q0, eta, eta, rate_p, steps, c["zeta0"])
                practical.append({"instance": r, "eta_Q=eta_w": eta, "eta_times_lambda_max": factor,
                                  "one_minus_rate": 1 - rate_p, "max_ratio_gap_over_bound": max(run_p.ratios[1:]),
                                  "holds": max(run_p.ratios[1:]) <= 1 + tol,
                                  "final_gap_over_initial": run_p.excess[-1] / run_p.excess[0],
                                  "guaranteed_final_factor": rate_p ** steps,
                                  "min_zeta_over_zeta0": run_p.invariants["min_zeta_over_zeta0"]})
    ok = worst_ce is None
    findings = [Finding("inequality_18_paper_rates", ok, {
        "instances": rows, "steps": steps, "worst_ratio": worst, "tolerance": tol,
        "what": "max over t of (L(theta_t) - L*) / (rate^t (L(theta_0) - L*)) with gamma = (15) at "
                "equality, eta_Q = 1/L of (17), eta_w of (16); w^(0) = 0, Q^(0) ~ N(0, 1)"},
        worst_ce, "" if ok else f"(18) fails at step {worst_ce['step'] if worst_ce else '?'}",
        _worst_margin("(L(theta_t) - L*) over rate^t (L(theta_0) - L*)", worst, worst_at))]
    ok17 = all(b["holds"] for b in bounds17)
    findings.append(Finding("bounds_used_by_17", ok17, {"instances": bounds17},
                            None if ok17 else {"instances": [b for b in bounds17 if not b["holds"]]},
                            "" if ok17 else "||A||_2 <= 1 + ||Z^T Zhat||_2/(m tau) or fbar_max <= ||Zbar||_2 "
                                            "fails at an instance", proof_step="the bounds in (17)"))
    findings.append(Finding("practical_rates", True, {
        "runs": practical, "all_hold": all(p["holds"] for p in practical),
        "note": "evidence only: Thm. 1 promises nothing at these rates; (18) is evaluated with "
                "eta_w = eta and the same zeta_0"}))
    return combine(findings, {"sizes": dict(sizes), "tau": BUDGET_TAU[ctx.budget.name]})


_HESSIAN_CACHE: dict = {}


def _hessian_top(dyn: Dynamics, Q0: torch.Tensor) -> float:
    """Largest |eigenvalue| of the Hessian of L in theta = (Q, w) at (Q0, 0), by power iteration
    (formula-free: memoised per instance and Q0)."""
    key = (dyn.inst.seed, tuple(sorted(dyn.inst.sizes.items())), dyn.inst.tau, Q0.numpy().tobytes())
    if key not in _HESSIAN_CACHE:
        if len(_HESSIAN_CACHE) > 64:
            _HESSIAN_CACHE.clear()
        _HESSIAN_CACHE[key] = _hessian_power(dyn, Q0)
    return _HESSIAN_CACHE[key]


def _hessian_power(dyn: Dynamics, Q0: torch.Tensor) -> float:
    inst = dyn.inst
    nQ = inst.H * inst.d * inst.d
    x0 = torch.cat([Q0.reshape(-1), torch.zeros(inst.H * inst.K, dtype=torch.float64)])

    def f(x):
        return dyn.excess(x[:nQ].reshape(inst.H, inst.d, inst.d), x[nQ:].reshape(inst.H, inst.K))

    gen = torch.Generator().manual_seed(0)
    v = randn(x0.shape, generator=gen, dtype=torch.float64)
    v = v / v.norm()
    lam = 0.0
    for _ in range(60):
        _, hv = torch.autograd.functional.hvp(f, x0, v)
        lam = float(hv.norm())
        v = hv / max(lam, 1e-300)
    return lam


# (17) as the proofs give it: thm1_L_sq_chain() in the paper's layout (a test ties the two)
L17_CORRECTED = ("8*gamma**2/K*Zbar_norm**4*(8*sqrt(2)*H*sqrt(K)*Zbar_norm/zeta_0*sqrt(Delta_0) + 1"
                 " + ZtZhat_norm/(m*tau))**2 + 2*H**2*Zbar_norm**4*gamma**4/K**2"
                 " + Max(16*gamma**2/K*Zbar_norm**4*((4*sqrt(2)*H*sqrt(K)*Zbar_norm/zeta_0*sqrt(Delta_0) + 1"
                 " + ZtZhat_norm/(m*tau))**2 + 32*H**2*K*Zbar_norm**2*Delta_0/zeta_0**2),"
                 " 8192*K*Zbar_norm**6*Delta_0/zeta_0**2*(N*(4*sqrt(2)*H*sqrt(K)*Zbar_norm/zeta_0*sqrt(Delta_0)"
                 " + 1 + ZtZhat_norm/(m*tau))**2 + 8*H**2*K*Zbar_norm**2*Delta_0/zeta_0**2))")

THM1 = Claim(
    id="yang2024.thm1",
    title="Linear convergence of GD with the learning rates (15)-(17) (Theorem 1, eq. (18))",
    paper=PAPER,
    statement=(r"Under Assumptions 1, 2, $w^{(0)}=0$, $\gamma$ as in (15), $\eta_Q\le1/L$ (17), "
               r"$\eta_w=\gamma^2\eta_Q$: $\mathcal L(\theta^{(t)})-\inf\mathcal L\le(1-\frac{\eta_w\zeta_0}"
               r"{2K})^t(\mathcal L(\theta^{(0)})-\inf\mathcal L)$ for all $t$."),
    assumptions=("Assumption 2 via Prop. 1 (H >= N, Gaussian Q^(0))", "plain GD (10) on the exact loss"),
    formulas=THM1_FORMULAS,
    checks={"symbolic": thm1_symbolic, "numeric": small_threads(thm1_numeric)},
    # a prompt holds N of the K tokens; Assumption 2 needs H >= N (Prop. 1)
    ranges=("N <= K", "H >= N"),
    setting=SETTING,
    correction=Correction(
        description="L^2 of (17) as Lemma 10's proof gives it at alpha of (44): "
                    "8 gamma^2/K ||Zbar||^4 (2 alpha gamma H + 1 + ||Z^T Zhat||/(m tau))^2 + 2 H^2 "
                    "||Zbar||^4 gamma^4/K^2 + max{16 gamma^2/K ||Zbar||^4 ((alpha gamma H + 1 + "
                    "||Z^T Zhat||/(m tau))^2 + (alpha gamma H)^2), 8192 K ||Zbar||^6 Delta_0/zeta_0^2 "
                    "(N (alpha gamma H + 1 + ||Z^T Zhat||/(m tau))^2 + (alpha gamma H)^2/4)}, "
                    "alpha gamma H = 4 sqrt(2) H sqrt(K) ||Zbar|| sqrt(Delta_0)/zeta_0",
        reason="(17) simplifies the printed (61), whose second term keeps gamma fbar ||Zbar|| / K to "
               "the first power (Lemma 10's correction); squared, that term does not decay in gamma "
               "and (17) falls below it for large gamma or small zeta_0. (17) also has ||Zbar||^2 "
               "where 2 alpha gamma H has ||Zbar||, which needs ||Zbar|| >= 1",
        formulas={"L_sq": L17_CORRECTED}),
)


# ==============================================================================================
# Training the torch model on the derived population loss (Thm. 2, Figs. 2-4)
# ==============================================================================================
@dataclass
class Trained:
    model: SoftmaxICL
    result: Any
    checkpoints: list


def ridge_prediction(inst: Instance, y: torch.Tensor, reg: float) -> torch.Tensor:
    """(y; (Z^Q)^T lambda_hat) with lambda_hat = (reg I_m + Z Z^T)^{-1} Z y: (22) with reg = m tau,
    (23) with reg = N tau (batched over prompts, y of shape (B, N))."""
    D = inst.dictionary.to(dtype=y.dtype, device=y.device)
    Z, ZQ = D.Z, D.ZQ
    Mreg = reg * torch.eye(inst.m, dtype=y.dtype, device=y.device) + Z @ Z.T
    lam = torch.linalg.solve(Mreg, Z @ y.T)                   # (m, B)
    return torch.cat([y, (ZQ.T @ lam).T], dim=1)


def train_exact(inst: Instance, H: int, steps: int, lr: float, seed: int, device: str = "auto",
                method: str = "adam", checkpoints: Sequence[int] = (),
                on_checkpoint: Callable[[int, SoftmaxICL], dict] | None = None) -> Trained:
    """Train the model (eq. (8), H heads, w = 0 start) on the derived population loss (9)."""
    rt = runtime(device)
    fq = float_quadratic(inst)
    D = inst.dictionary.to(dtype=rt.dtype, device=rt.device)
    cfg = SoftmaxConfig(inst.d, inst.K, inst.N, H)
    model = SoftmaxICL(cfg, generator=rt.generator(seed), dtype=rt.dtype, device=rt.device)
    gap = fq.excess(rt.dtype, rt.device)
    marks = sorted(set(int(c) for c in checkpoints if 0 <= c <= steps))
    out = []
    done = 0

    def record(step_):
        if on_checkpoint is not None:
            with torch.no_grad():
                out.append({"step": step_, **on_checkpoint(step_, model)})

    result = None
    if 0 in marks:
        record(0)
    segments = [m for m in marks if m > 0] + ([steps] if steps not in marks else [])
    losses: list = []
    for end in segments:
        n = end - done
        if n <= 0:
            continue
        res = optimise(lambda: gap(model.coefficients(D.V_all)), model.parameters(), method=method,
                       steps=n, lr=lr, grad_tol=0.0)
        losses += res.losses
        done = end
        result = res
        if res.status == "diverged":
            break
        if end in marks:
            record(end)
    if result is not None:
        result.losses = losses
        result.steps = done
    return Trained(model, result, out)


def _test_prompts(inst: Instance, law: TaskLaw, count: int, seed: int, dtype, device) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    tasks = sample_tasks(law, inst.dictionary, count, gen)
    return tasks.prompt_labels.to(dtype=dtype, device=device)


OOD = {"mean": 1.0, "std": 2.0}    # Sec. 4: lambda ~ N(1_m, 4 I_m)


def inference_sets(inst: Instance, seed: int, count: int = 200, dtype=torch.float64, device="cpu"):
    laws = {"in_domain": TaskLaw(inst.tau), "out_of_domain": TaskLaw(inst.tau, **OOD)}
    return {name: _test_prompts(inst, law, count, seed + i, dtype, device)
            for i, (name, law) in enumerate(laws.items())}


def inference_loss(model: SoftmaxICL, inst: Instance, y: torch.Tensor) -> float:
    """(1/K) mean over prompts of ||yhat - yhat*||^2 (Sec. 4, Fig. 2)."""
    D = inst.dictionary.to(dtype=y.dtype, device=y.device)
    yhat = model(D.V_all, y)
    ystar = ridge_prediction(inst, y, inst.m * inst.tau)
    return float(((yhat - ystar) ** 2).sum(-1).mean() / inst.K)


TRAIN_BUDGET = {"quick": {"steps": 1500, "lr": 0.01}, "default": {"steps": 4000, "lr": 0.01},
                "paper": {"steps": 50000, "lr": 1e-4}}
FIG_SIZES = {"quick": {"K": 20, "d": 8, "m": 4, "N": 6, "H": 12},
             "default": {"K": 40, "d": 16, "m": 6, "N": 10, "H": 20},
             "paper": {"K": 200, "d": 100, "m": 20, "N": 30, "H": 64}}
FIG_TAU = {"quick": 0.1, "default": 0.1, "paper": 0.01}


def _fig_instance(ctx: Context, tag: str, **changes) -> Instance:
    sizes = {**FIG_SIZES[ctx.budget.name], **{k: v for k, v in ctx.sizes.items()}, **changes}
    sizes = SETTING.resolve(ctx.budget.name, {k: sizes[k] for k in SIZE_NAMES}) if ctx.budget.name == "paper" \
        else {k: sizes[k] for k in SIZE_NAMES}
    return make_instance(ctx, tag, sizes, FIG_TAU[ctx.budget.name])


# ==============================================================================================
# Theorem 2: inference-time performance, yhat -> yhat* (22)
# ==============================================================================================
_Bl = FormulaSymbol("B", positive=True)
_Zn = FormulaSymbol("Z_norm", positive=True)
_dl = FormulaSymbol("delta", positive=True, unit=True)
_epsf = FormulaSymbol("epsilon", positive=True)
_lsq = FormulaSymbol("lam_sq", positive=True)
THM2_FORMULAS = (
    NamedFormula("T_min", "log(B**2*Delta_0*(Z_norm + sqrt(tau)*(2*sqrt(N*log(1/delta)) + 2*log(1/delta)"
                          " + N)**(1/2))**2/(m*tau*epsilon))/log(1/(1 - eta_w*zeta_0/(2*K)))",
                 (_Bl, _D0, _Zn, _tau, _N, _dl, _m, _epsf, _etaw, _z0, _K), equation="(21)",
                 description="iterations after which (22) holds with probability 1 - delta", weaker="larger"),
    NamedFormula("tail", "N*tau*lam_sq + 2*sqrt(N*log(1/delta))*lam_sq*tau + 2*lam_sq*tau*log(1/delta)",
                 (_N, _tau, _lsq, _dl), equation="(68)",
                 description="P(||y - Z^T lambda||^2 >= tail) <= delta (Laurent-Massart)", weaker="larger"),
    NamedFormula("noise_level", "m*tau/N", (_m, _tau, _N), equation="Sec. 3.2",
                 description="the noise level the ridge (20) implicitly assumes, compared with (25)"),
)


def _T_min_probe(paper: sympy.Expr, derived: sympy.Expr, rng: np.random.Generator, syms: tuple,
                 count: int = 60):
    """Is paper >= derived at random points of the theorem's domain (delta in (0, 1), the rate
    eta_w zeta_0 / 2K in (0, 1), epsilon > 0 ("for any epsilon > 0") from 1e-6 to 1e3, zeta_0 (an
    eigenvalue, (14)) and tau from 1e-4 to 1e3, the other letters positive over several orders
    of magnitude)?
    A point where paper < derived (in float, by more than 1e-9 relative) is confirmed at 50 digits."""
    B, D0, Zn, tau, dl, eps, ew, z0, N, m, K = syms
    letters = [x for x in syms]
    fp = sympy.lambdify(letters, paper, "math")
    fd = sympy.lambdify(letters, derived, "math")
    for _ in range(count):
        Ki, Ni = int(rng.integers(2, 60)), int(rng.integers(1, 30))
        point = {B: 10.0 ** rng.uniform(-3, 3), D0: 10.0 ** rng.uniform(-3, 3), Zn: 10.0 ** rng.uniform(-2, 2),
                 tau: 10.0 ** rng.uniform(-4, 3), dl: 10.0 ** rng.uniform(-6, -0.05),
                 eps: 10.0 ** rng.uniform(-6, 3), z0: 10.0 ** rng.uniform(-4, 3), N: Ni,
                 m: int(rng.integers(1, 30)), K: Ki}
        point[ew] = float(rng.uniform(0.01, 0.99)) * 2 * Ki / point[z0]
        exact = {k: (sympy.Integer(v) if isinstance(v, int) else sympy.Rational(v).limit_denominator(10 ** 9))
                 for k, v in point.items()}
        try:
            pv, dv = fp(*[float(exact[x]) for x in letters]), fd(*[float(exact[x]) for x in letters])
        except (ValueError, ZeroDivisionError, OverflowError, TypeError):
            pv, dv = None, None
        if pv is None or isinstance(pv, complex) or not math.isfinite(pv):
            pe = sympy.N(paper.subs(exact), 50)
            if pe.is_real:
                continue
            return False, ({str(k): str(v) for k, v in exact.items()}, str(pe), float(sympy.N(derived.subs(exact))))
        if pv < dv - 1e-9 * abs(dv):
            pe, de = sympy.N(paper.subs(exact), 50), sympy.N(derived.subs(exact), 50)
            if pe < de:
                return False, ({str(k): str(v) for k, v in exact.items()}, float(pe), float(de))
    return True, None


def thm2_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    B, D0, Zn, tau, dl, eps, ew, z0, T = sympy.symbols("B Delta_0 Z_norm tau delta epsilon eta_w zeta_0 T",
                                                      positive=True)
    N, m, K = SIZE["N"], SIZE["m"], SIZE["K"]
    rho = 1 - ew * z0 / (2 * K)                                   # (18)
    y_bound = B * (Zn + sympy.sqrt(tau) * sympy.sqrt(N + 2 * sympy.sqrt(N * sympy.log(1 / dl))
                                                     + 2 * sympy.log(1 / dl)))   # (69)
    A_gap_sq = 2 * K / (m * tau) * D0 * rho ** T                  # (70): ||Ahat - A||^2
    lhs = A_gap_sq * y_bound ** 2 / (2 * K)                       # (1/2K)||Ahat - A||^2 ||y||^2
    # lhs <= eps  <=>  T log(1/rho) >= log(...)
    T_derived = sympy.log(sympy.simplify(lhs.subs(T, 0) / eps)) / sympy.log(1 / rho)
    paper = sympy.sympify(F["T_min"]).subs({sympy.Symbol(n, positive=True): sympy.Symbol(n, positive=True)
                                           for n in ("B", "Delta_0", "Z_norm", "tau", "delta", "epsilon",
                                                     "eta_w", "zeta_0")})
    vals = {B: 2, D0: sympy.Rational(3, 2), Zn: 3, tau: sympy.Rational(1, 10), dl: sympy.Rational(1, 20),
            eps: sympy.Rational(1, 1000), ew: sympy.Rational(1, 5), z0: sympy.Rational(1, 100), N: 5, m: 4, K: 12}
    pe, dv = sympy.N(paper.subs(vals), 30), float(T_derived.subs(vals))
    pv = float(pe) if pe.is_real else str(pe)              # (21) must be a real number of steps
    ok_T = pe.is_real is True and (abs(pv - dv) <= 1e-9 * abs(dv) or pv >= dv)
    if ok_T:   # (21) must be >= the derived T wherever the theorem applies, not just at one point
        ok_T, where = _T_min_probe(paper, T_derived, ctx.rng("thm2-T"),
                                   (B, D0, Zn, tau, dl, eps, ew, z0, N, m, K))
        if not ok_T:
            vals, pv, dv = where
    findings = [Finding("T_min_from_the_proof", ok_T, {"derived": str(T_derived), "at": {str(k): str(v) for k, v in vals.items()},
                                                        "paper_value": pv, "derived_value": dv},
                        None if ok_T else {"paper_T": pv, "derived_T": dv, "at": {str(k): str(v) for k, v in vals.items()}},
                        "" if ok_T else "(21) stops before the chain (69)-(70) reaches epsilon" if isinstance(pv, float)
                        else "(21) is not a real number of steps")]
    # noise level: (20) has regulariser (m tau / 2N)||lambda||^2, (25) has (tau' / 2)||lambda||^2
    tp = sympy.Symbol("tau_prime", positive=True)
    obj20, _ = _ridge_minimiser(SIZE["m"] * TAU_SYM / SIZE["N"])
    obj25, _ = _ridge_minimiser(tp)
    diff = (obj20 - obj25).simplify()
    sol = sympy.solve(list(diff.terms.values())[0], tp) if diff.terms else []
    derived_nl = sol[0] if len(sol) == 1 else None
    ok_n = derived_nl is not None and sympy.simplify(sympy.sympify(F["noise_level"]).subs(
        sympy.Symbol("tau", positive=True), TAU_SYM) - derived_nl) == 0
    findings.append(Finding("noise_level", ok_n, {"derived": str(derived_nl)},
                            None if ok_n else {"derived": str(derived_nl), "paper": ctx.formula_texts["noise_level"]},
                            "" if ok_n else "(20) is not (25) at the stated noise level"))
    steps = [step("(69)", r"\|y\|_2 \le B\Big(\|Z\|_2+\sqrt\tau\big(N+2\sqrt{N\log(1/\delta)}+2\log(1/\delta)\big)^{1/2}\Big)",
                  "with probability 1 - delta, from (68) (checked by Monte Carlo in the numeric tier)."),
             step("(70)", r"\|\hat A-A\|_2^2 \le \frac{2K}{m\tau}\big(\mathcal L(\theta^{(T)})-\mathcal L^\star\big)"
                  r"\le \frac{2K}{m\tau}\Delta^{(0)}\rho^T", "Zbar^2 >= m tau I and Thm. 1."),
             step("Solve for T", r"\frac1{2K}\|\hat A-A\|^2\|y\|^2\le\varepsilon \iff T \ge " + sympy.latex(T_derived), ""),
             step("Noise level", r"\frac{m\tau}{2N}\|\lambda\|^2 = \frac{\tau'}2\|\lambda\|^2 \iff \tau' = "
                  + sympy.latex(derived_nl), "(20) is the ridge (25) with the noise level tau'.")]
    return combine(findings, steps=steps)


@lru_cache(maxsize=8)
def _thm2_chain(seed: int, sizes: tuple, tau: float, seed_init: int, seed_prompts: int):
    """The worst ratio (1/2K)||yhat - yhat*||^2 / ((L - L*)||y||^2 / (m tau)) over 200 GD steps
    (every 40th) and the prompt sets, with where it occurs (and whether (70)'s spectral bound held)."""
    sizes = dict(sizes)
    inst = Instance(sizes, tau, random_dictionary(sizes["K"], sizes["d"], sizes["m"], sizes["N"],
                                                  torch.Generator().manual_seed(seed)), seed)
    dyn = dynamics(inst)
    gen = torch.Generator().manual_seed(seed_init)
    Q, w = init_Q(inst, gen), torch.zeros(inst.H, inst.K, dtype=torch.float64)
    sets = inference_sets(inst, seed_prompts)
    worst, where = 0.0, None
    eta = 0.5 / _hessian_top(dyn, Q)
    for t in range(0, 201):
        if t % 40 == 0:
            with torch.no_grad():
                Ah = dyn.Ahat(Q, w)
                ex = float(dyn.excess(Q, w))
                spec_ok = ex >= inst.m * inst.tau / (2 * inst.K) * float(torch.linalg.matrix_norm(Ah - dyn.A, 2)) ** 2 - 1e-12
                for name, y in sets.items():
                    lhs = ((y @ Ah - ridge_prediction(inst, y, inst.m * inst.tau)) ** 2).sum(-1) / (2 * inst.K)
                    rhs = ex * (y ** 2).sum(-1) / (inst.m * inst.tau)
                    r = float((lhs / rhs).max())
                    if r > worst or not spec_ok:
                        worst, where = max(r, worst), {"step": t, "set": name, "excess": ex, "ratio": r,
                                                       "spectral_bound_70_holds": spec_ok}
        _, gQ, gw = _grads(dyn, Q, w)
        Q, w = Q - eta * gQ, w - eta * gw
    return worst, where


TAIL_GRID = {"N": (1, 2, 4, 10, 50, 300), "delta": (0.9, 0.5, 0.1, 1e-2, 1e-4, 1e-8),
             "tau": (1e-4, 0.01, 1.0, 7.0, 1e3), "lam_sq": (1e-4, 0.05, 1.0, 30.0, 1e4)}


def _tail_exact(F) -> Finding:
    """(68) exactly: y - Z^T lambda = eps^T lambda has i.i.d. N(0, tau ||lambda||^2) entries, so
    P(||y - Z^T lambda||^2 >= t) = Q(N/2, t / (2 tau ||lambda||^2)) (regularised upper incomplete
    gamma, mpmath at 30 digits); it must be <= delta on a grid of N, delta, tau, ||lambda||^2."""
    import mpmath

    syms = sorted(F.free_symbols, key=str)
    f = sympy.lambdify(syms, F, "mpmath")
    worst, bad = 0.0, None
    with mpmath.workdps(30):
        for N in TAIL_GRID["N"]:
            for dl in TAIL_GRID["delta"]:
                for tau in TAIL_GRID["tau"]:
                    for lsq in TAIL_GRID["lam_sq"]:
                        point = {"N": N, "delta": mpmath.mpf(dl), "tau": mpmath.mpf(tau), "lam_sq": mpmath.mpf(lsq)}
                        try:
                            t = f(*[point[str(x)] for x in syms])
                        except (ValueError, ZeroDivisionError, TypeError):
                            t = None
                        if t is None or not isinstance(t, mpmath.mpf) or not mpmath.isfinite(t):
                            prob = None
                        else:
                            prob = mpmath.mpf(1) if t <= 0 else mpmath.gammainc(N / mpmath.mpf(2), t / (2 * tau * lsq),
                                                                                mpmath.inf, regularized=True)
                        ratio = math.inf if prob is None else float(prob / dl)
                        if ratio > worst:
                            worst = ratio
                            bad = {"N": N, "delta": dl, "tau": tau, "lam_sq": lsq,
                                   "threshold": None if t is None else str(t),
                                   "probability": None if prob is None else mpmath.nstr(prob, 12)}
    ok = worst <= 1.0
    return Finding("tail_68_exact", ok, {"worst_probability_over_delta": worst, "at": bad,
                                         "grid": {k: list(v) for k, v in TAIL_GRID.items()}},
                   None if ok else bad,
                   "" if ok else "P(||y - Z^T lambda||^2 >= (68)) exceeds delta (exact chi-square tail)",
                   _worst_margin("P(||y - Z^T lambda||^2 >= (68)) over delta", worst, bad))


def chi_square_quantile(N: int, delta):
    """The least t with P(chi^2_N >= t) <= delta: Q(N/2, t/2) = delta (regularised upper
    incomplete gamma), by Newton's method in mpmath at the caller's precision from scipy's
    float64 quantile (None if it does not converge)."""
    import mpmath
    from scipy.stats import chi2

    a = mpmath.mpf(N) / 2
    x = mpmath.mpf(float(chi2.isf(float(delta), N))) / 2
    if not mpmath.isfinite(x) or x <= 0:
        return None
    for _ in range(200):
        step = (mpmath.gammainc(a, x, mpmath.inf, regularized=True) - delta) \
            / (x ** (a - 1) * mpmath.exp(-x) / mpmath.gamma(a))   # Q(a, x) - delta over -dQ/dx
        x += step
        if abs(step) <= abs(x) * mpmath.eps * 4:
            return 2 * x
    return None


def thm2_exact(point: dict) -> dict | None:
    """What (68) bounds: eps^T lambda has i.i.d. N(0, tau ||lambda||^2) entries, so the least
    threshold exceeded with probability at most delta is tau ||lambda||^2 times the chi-square
    quantile with N degrees of freedom (``chi_square_quantile``); (21) has no exact value (it
    bounds a number of GD steps)."""
    N = point["N"]
    if N != int(N) or not 1 <= N <= 10 ** 6 or not 0 < point["delta"] < 1:
        return None
    q = chi_square_quantile(int(N), point["delta"])
    return None if q is None else {"tail": point["tau"] * point["lam_sq"] * q}


THM2_EXACT = ExactValues(thm2_exact, "tau ||lambda||^2 times the chi-square quantile of (68), "
                                     "N <= 10^6")


def thm2_numeric(ctx: Context) -> TierResult:
    F = ctx.formulas
    inst = make_instance(ctx)
    findings = []
    # (68): the chi-square tail, by Monte Carlo
    rng = ctx.rng("thm2-tail")
    n = ctx.budget.mc_samples
    rows = []
    ok_tail = True
    for dl in (0.1, 0.01):
        lam = rng.standard_normal(inst.m)
        eps = math.sqrt(inst.tau) * rng.standard_normal((n, inst.m, inst.N))
        resid = np.einsum("m,bmn->bn", lam, eps)                      # y - Z^T lambda
        thr = float_value(F["tail"], {"N": inst.N, "tau": inst.tau, "lam_sq": float(lam @ lam), "delta": dl})
        freq = (resid ** 2).sum(-1) >= thr
        est = estimate(freq.astype(float))
        hi = est.interval(LEVEL, 2)[1]
        lo = est.interval(LEVEL, 2)[0]
        holds = lo <= dl
        ok_tail &= holds
        rows.append({"delta": dl, "threshold": thr, "frequency": est.mean, "ci": [lo, hi], "holds": holds})
    findings.append(Finding("tail_68", ok_tail, {"rows": rows, "samples": n},
                            None if ok_tail else {"rows": rows, "instance": inst.as_dict()},
                            "" if ok_tail else "the tail (68) is exceeded more often than delta"))
    findings.append(_tail_exact(F["tail"]))
    # the chain (22) <= (L - L*) ||y||^2 / (m tau) along a GD trajectory, every prompt: formula-free,
    # so computed once per instance and shared by every formula checked (mutants included)
    worst, where = _thm2_chain(inst.seed, tuple(sorted(inst.sizes.items())), inst.tau,
                               ctx.seed_for("thm2-init"), ctx.seed_for("thm2-prompts"))
    where = dict(where) if where is not None else None
    ok = worst <= 1 + 1e-9 and where is not None and where["spectral_bound_70_holds"]
    findings.append(Finding("inference_bound_chain", ok, {
        "worst_ratio": worst, "at": where, "prompts_per_set": 200, "checkpoints": 6,
        "what": "(1/2K)||yhat - yhat*||^2 <= (L - L*) ||y||^2 / (m tau) for every prompt (70)"},
        None if ok else {"instance": inst.as_dict(), **(where or {})},
        "" if ok else "the inference error exceeds the bound of (70)",
        _worst_margin("(1/2K)||yhat - yhat*||^2 over (L - L*) ||y||^2 / (m tau)", worst,
                      {k: v for k, v in (where or {}).items() if not isinstance(v, (dict, list))})))
    return combine(findings, {"instance": inst.as_dict(),
                              "note": "(70) writes ||Zbar(Ahat - A)||_2^2 for the Frobenius norm; with "
                                      "the spectral norm of the notation section only '>=' holds, which "
                                      "is all the proof uses"})


def thm2_train(ctx: Context) -> TierResult:
    inst = _fig_instance(ctx, "thm2-train")
    tb = TRAIN_BUDGET[ctx.budget.name]
    rt = runtime(ctx.device)
    sets = inference_sets(inst, ctx.seed_for("thm2-test"), dtype=rt.dtype, device=rt.device)

    def check(step_, model):
        return {name: inference_loss(model, inst, y) for name, y in sets.items()}

    tr = train_exact(inst, inst.H, tb["steps"], tb["lr"], ctx.seed_for("thm2-model"), ctx.device,
                     checkpoints=(0, tb["steps"]), on_checkpoint=check)
    if tr.result.status == "diverged":
        return combine([Finding("trained_outputs", None, tr.result.summary(), reason=tr.result.reason)])
    first, last = tr.checkpoints[0], tr.checkpoints[-1]
    scale = {name: float((ridge_prediction(inst, y, inst.m * inst.tau) ** 2).sum(-1).mean() / inst.K)
             for name, y in sets.items()}
    rel = {name: last[name] / scale[name] for name in sets}
    thr = 1e-2 if rt.dtype == torch.float64 else 5e-2
    ok = all(r <= thr for r in rel.values())
    ev = {"relative_inference_error": rel, "initial": first, "final": last,
          "threshold": thr, "why": "relative mean squared distance to yhat* (22); a converged model "
          "has Ahat -> A, so the error is of the order of the remaining excess loss",
          "training": tr.result.summary(curve_points=10), "instance": inst.as_dict(),
          "runtime": rt.describe()}
    return combine([Finding("trained_outputs", ok, ev,
                            None if ok else {"instance": inst.as_dict(), "relative_error": rel,
                                             "steps": tb["steps"], "lr": tb["lr"]},
                            "" if ok else "the trained outputs are not close to yhat*")])


THM2 = Claim(
    id="yang2024.thm2",
    title="Inference: the trained transformer implements the ridge regression (20) (Theorem 2)",
    paper=PAPER,
    statement=(r"If $T$ satisfies (21), then for any prompt with $\|\lambda\|_2\le B$, with probability "
               r"$\ge1-\delta$, $\frac1{2K}\|\hat y-\hat y^\star\|_2^2\le\varepsilon$ with $\hat y^\star="
               r"(y;(Z^Q)^\top\hat\lambda)$; (20) is the ridge (25) at noise level $\frac mN\tau$."),
    assumptions=("the assumptions of Thm. 1", "Assumption 4 at inference (lambda may be out of domain)"),
    formulas=THM2_FORMULAS,
    checks={"symbolic": thm2_symbolic, "numeric": small_threads(thm2_numeric),
            "train": small_threads(thm2_train)},
    setting=SETTING,
    exact=THM2_EXACT,
)


# ==============================================================================================
# Figure 2: training and inference losses descend together; out-of-domain is higher
# ==============================================================================================
def _spearman(a: Sequence[float], b: Sequence[float]) -> float:
    ra = np.argsort(np.argsort(a))
    rb = np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


# Sec. 4's experiments: K = 200, d = 100, m = 20, N = 30 (Figs. 2, 4, 5), H = 64 (Fig. 2), a
# 4-layer encoder with d_model = 256, d_ff = 512 (Figs. 2, 5); Fig. 3: m = 100, tau = 0.01,
# N = 50..150
PAPER_FIG_SIZES = {"K": 200, "d": 100, "m": 20, "N": 30}


def _fig_stand_in(inst: "Instance", figure: str, extra: str = "", **paper) -> str:
    """How a trained instance is smaller than Sec. 4's experiment for ``figure``, or ""."""
    want = {**PAPER_FIG_SIZES, **paper}
    why = smaller_than_paper({k: getattr(inst, k) for k in want}, want, f"Sec. 4, {figure}",
                             extra)
    return why and f"{why}; --budget paper trains the paper's sizes"


def _combine_at(tag: str, findings: list, *args, **kwargs) -> TierResult:
    """``combine`` with every finding a stand-in when ``tag`` says how the model is smaller."""
    return combine(as_stand_ins(findings, tag), *args, **kwargs)


def fig2_train(ctx: Context) -> TierResult:
    inst = _fig_instance(ctx, "fig2")
    tag = _fig_stand_in(inst, "Fig. 2", H=64)
    tb = TRAIN_BUDGET[ctx.budget.name]
    rt = runtime(ctx.device)
    sets = inference_sets(inst, ctx.seed_for("fig2-test"), dtype=rt.dtype, device=rt.device)
    fq = float_quadratic(inst)
    gap = fq.excess(rt.dtype, rt.device)
    D = inst.dictionary.to(dtype=rt.dtype, device=rt.device)
    marks = sorted({0, *[int(tb["steps"] * f) for f in (0.02, 0.05, 0.1, 0.2, 0.35, 0.5, 0.75, 1.0)]})

    def check(step_, model):
        return {"train_excess": float(gap(model.coefficients(D.V_all))),
                **{name: inference_loss(model, inst, y) for name, y in sets.items()}}

    tr = train_exact(inst, inst.H, tb["steps"], tb["lr"], ctx.seed_for("fig2-model"), ctx.device,
                     checkpoints=marks, on_checkpoint=check)
    if tr.result.status == "diverged":
        return _combine_at(tag, [Finding("curves", None, tr.result.summary(), reason=tr.result.reason)])
    cps = tr.checkpoints
    curves = {k: [c[k] for c in cps] for k in ("train_excess", "in_domain", "out_of_domain")}
    drop = {k: v[-1] / v[0] for k, v in curves.items()}
    rho = {k: _spearman(curves["train_excess"], curves[k]) for k in ("in_domain", "out_of_domain")}
    floor = 1e3 * rt.eps
    informative = [i for i, c in enumerate(cps) if c["in_domain"] > floor * max(1.0, cps[0]["in_domain"])]
    ood_higher = [cps[i]["out_of_domain"] > cps[i]["in_domain"] for i in informative]
    frac = float(np.mean(ood_higher)) if ood_higher else math.nan
    f_desc = all(v <= 1e-2 for v in drop.values())
    f_tog = all(r >= 0.9 for r in rho.values())
    f_ood = bool(ood_higher) and frac >= 0.9
    ev = {"checkpoints": cps, "final_over_initial": drop, "spearman_with_training_loss": rho,
          "ood_higher_fraction": frac, "instance": inst.as_dict(), "training": tr.result.summary(10),
          "protocol": f"Adam lr {tb['lr']} on the derived population loss, H = {inst.H}; inference loss "
                      f"(1/K) mean ||yhat - yhat*||^2 over 200 prompts with lambda ~ N(0, I) (in domain) "
                      f"and N(1, 4I) (out of domain); the 4-layer panel (b) is yang2024.fig5",
          "runtime": rt.describe()}
    findings = [
        Finding("all_descend", f_desc, {"final_over_initial": drop, "threshold": 1e-2},
                None if f_desc else {"final_over_initial": drop, "instance": inst.as_dict()},
                "" if f_desc else "a loss did not fall by 100x"),
        Finding("descend_together", f_tog, {"spearman": rho, "threshold": 0.9},
                None if f_tog else {"spearman": rho}, "" if f_tog else "the inference losses do not "
                                                                       "follow the training loss"),
        Finding("ood_higher", f_ood, {"fraction_of_checkpoints": frac, "threshold": 0.9},
                None if f_ood else {"fraction": frac}, "" if f_ood else "the out-of-domain inference loss "
                                                                        "is not the higher one"),
    ]
    return _combine_at(tag, findings, ev)


FIG2 = Claim(
    id="yang2024.fig2",
    title="Training and inference losses of the 1-layer transformer descend together (Figure 2(a))",
    paper=PAPER,
    statement=(r"Trained on the population loss (9), the training loss and the inference losses "
               r"$\frac1K\|\hat y-\hat y^\star\|^2$ on in-domain ($\lambda\sim\mathcal N(0,I)$) and "
               r"out-of-domain ($\lambda\sim\mathcal N(1,4I)$) prompts descend together; the "
               r"out-of-domain one is higher."),
    assumptions=("quick/default: CPU sizes, Adam lr 1e-2 on the derived loss; paper: N = 30, K = 200, "
                 "d = 100, m = 20, H = 64, Adam lr 1e-4",),
    formulas=(),
    checks={"train": small_threads(fig2_train)},
    setting=SETTING,
)

# ==============================================================================================
# Figure 3: the gap between yhat* and yhat_best versus N at m = 100, tau = 0.01
# ==============================================================================================
@lru_cache(maxsize=None)
def expected_gap_poly() -> Poly:
    """E_{lambda, eps} ||M y||^2 for a fixed M (the difference of two linear predictors), y of (73)."""
    lam, Ep = _task_letters()
    Z = matrix("Z", "m", "N")
    M = matrix("M", "q", "N")
    y = (Z + Ep * sympy.sqrt(TAU_SYM)).T @ lam
    My = M @ y
    return expectation(My.T @ My).simplify()


def _gap_matrix(Zhat: torch.Tensor, N: int, tau: float) -> tuple[torch.Tensor, torch.Tensor]:
    """M with yhat* - yhat_best = (0; M y): M = (Z^Q)^T[(ZZ^T + m tau I)^{-1} - (ZZ^T + N tau I)^{-1}]Z."""
    m = Zhat.shape[0]
    Z, ZQ = Zhat[:, :N], Zhat[:, N:]
    S = Z @ Z.T
    eye = torch.eye(m, dtype=Zhat.dtype)
    M = ZQ.T @ (torch.linalg.solve(S + m * tau * eye, Z) - torch.linalg.solve(S + N * tau * eye, Z))
    return M, Z


FIG3_GRID = {"m": 100, "tau": 0.01, "K": 200, "N": tuple(range(50, 151, 10))}


def _gap_direction(change: dict, m: int) -> str:
    """What Fig. 3's 'closer N to m is better' predicts for a step from_N -> to_N."""
    if change["to_N"] <= m:
        return f"fall (the step moves toward N = m = {m})"
    return f"rise (the step moves away from N = m = {m})"


def fig3_numeric(ctx: Context) -> TierResult:
    poly = expected_gap_poly()
    g = FIG3_GRID
    R = {"quick": 6, "default": 20}.get(ctx.budget.name, 50)
    rng = ctx.rng("fig3")
    Ns = list(g["N"])
    gaps = np.zeros((R, len(Ns)))
    for r in range(R):
        Zhat = torch.tensor(rng.standard_normal((g["m"], g["K"])))
        for i, N in enumerate(Ns):
            M, Z = _gap_matrix(Zhat, N, g["tau"])
            gaps[r, i] = float(poly.evaluate({"M": M, "Z": Z}, {"m": g["m"], "N": N, "tau": g["tau"]})) / g["K"]
    mean = gaps.mean(0)
    se = gaps.std(0, ddof=1) / math.sqrt(R)
    i0 = Ns.index(g["m"])
    # Monte Carlo cross-check of the derived expectation at one N
    Zhat = torch.tensor(rng.standard_normal((g["m"], g["K"])))
    Nc = 80
    M, Z = _gap_matrix(Zhat, Nc, g["tau"])
    D = Dictionary(torch.zeros(2, g["K"], dtype=torch.float64), Zhat, Nc)
    gen = torch.Generator().manual_seed(ctx.seed_for("fig3-mc"))
    n = min(ctx.budget.mc_samples, 2000 if ctx.budget.name == "quick" else 20_000)
    samples = np.concatenate([
        (((sample_tasks(TaskLaw(g["tau"]), D, 500, gen).prompt_labels @ M.T) ** 2).sum(-1) / g["K"]).numpy()
        for _ in range(n // 500)])
    exact = float(poly.evaluate({"M": M, "Z": Z}, {"m": g["m"], "N": Nc, "tau": g["tau"]})) / g["K"]
    mc = _mc_compare("derived_expectation_vs_monte_carlo", samples, {"derived": exact}, 1, ["derived"],
                     {"N": Nc})
    # paired differences between neighbours on each side of N = m
    diffs = np.diff(gaps, axis=1)
    bad = []
    for i in range(len(Ns) - 1):
        want_down = Ns[i + 1] <= g["m"]
        d = diffs[:, i]
        dm, ds = d.mean(), d.std(ddof=1) / math.sqrt(R)
        z = dm / ds if ds > 0 else math.copysign(math.inf, dm)
        zc = z_critical(LEVEL, len(Ns) - 1)
        if (want_down and z > zc) or (not want_down and z < -zc):
            bad.append({"from_N": Ns[i], "to_N": Ns[i + 1], "mean_change": float(dm), "se": float(ds),
                        "z": float(z), "expected": "decrease" if want_down else "increase"})
    curve = [{"N": N, "mean_gap": float(mean[i]), "se": float(se[i])} for i, N in enumerate(Ns)]
    zero_ok = mean[i0] <= 1e-20
    near_ok = mean[i0 - 1] > mean[i0] and mean[i0 + 1] > mean[i0]
    findings = [mc,
                Finding("zero_at_N_equals_m", bool(zero_ok and near_ok), {"gap_at_m": float(mean[i0]),
                        "neighbours": [float(mean[i0 - 1]), float(mean[i0 + 1])]},
                        reason="" if zero_ok and near_ok else "the gap is not minimal at N = m"),
                Finding("closer_is_better", not bad, {"curve": curve, "instances": R,
                                                      "test": "paired z-test of each neighbouring change, "
                                                              "Bonferroni over the grid"},
                        None if not bad else {"violations": bad, "curve": curve, "seed": ctx.seed,
                                              "setting": "Zhat ~ N(0, 1) entries, m = 100, K = 200, tau = 0.01"},
                        "" if not bad else f"the expected gap should {_gap_direction(bad[0], g['m'])}, "
                                           f"but from N = {bad[0]['from_N']} to {bad[0]['to_N']} it changes by "
                                           f"{bad[0]['mean_change']:+.3g} +- {bad[0]['se']:.2g} (a "
                                           f"{'rise' if bad[0]['mean_change'] > 0 else 'fall'})")]
    steps = [step("Gap", r"\hat y^\star-\hat y^{\mathrm{best}} = \begin{pmatrix}0\\ My\end{pmatrix},\ "
                  r"M = (Z^Q)^\top\big[(ZZ^\top+m\tau I)^{-1}-(ZZ^\top+N\tau I)^{-1}\big]Z", "(22), (23), (25)."),
             step("Expectation", r"\mathbb E\|My\|^2 = " + poly.latex(),
                  "Wick over lambda and eps with y = (Z + eps^P)^T lambda (73)."),
             step("Curve", r"\frac1K\mathbb E\|\hat y^\star-\hat y^{\mathrm{best}}\|^2,\ N = 50,\dots,150",
                  f"averaged over {R} Gaussian representation matrices (m = 100, K = 200, tau = 0.01).")]
    res = combine(findings, {"grid": {"m": g["m"], "K": g["K"], "tau": g["tau"]}}, steps=steps)
    return res


def fig3_train(ctx: Context) -> TierResult:
    """CPU sizes (m = 10, m tau = 1 as in the paper): trained models at N = m/2, m, 3m/2."""
    tag = ("m = 10, K = 30, N in {5, 10, 15} (m tau = 1) for the paper's m = 100, N = 50..150, "
           "tau = 0.01 (Sec. 4, Fig. 3); the numeric tier computes the paper's grid")
    m = 10
    tau = 0.1
    K = 30
    tb = TRAIN_BUDGET[ctx.budget.name]
    rows = []
    for N in (5, 10, 15):
        sizes = {"K": K, "d": 12, "m": m, "N": N, "H": 2 * N}
        inst = make_instance(ctx, "fig3-train", sizes, tau)
        tr = train_exact(inst, 2 * N, tb["steps"] if ctx.budget.name != "paper" else 5000,
                         tb["lr"] if ctx.budget.name != "paper" else 1e-2, ctx.seed_for("fig3-model", N),
                         ctx.device)
        if tr.result.status == "diverged":
            return _combine_at(tag, [Finding("trained_gap", None, tr.result.summary(), reason=tr.result.reason)])
        with torch.no_grad():
            Ah = tr.model.coefficients(inst.dictionary.V_all.to(tr.model.Q)).double().cpu().numpy()
        Zn = inst.dictionary.Z.numpy()
        ZQ = inst.dictionary.ZQ.numpy()
        A_best = np.hstack([np.eye(N), Zn.T @ np.linalg.solve(Zn @ Zn.T + N * tau * np.eye(m), ZQ)])
        Cy = Zn.T @ Zn + m * tau * np.eye(N)                      # E[y y^T]
        R = Ah - A_best
        trained_gap = float(np.trace(R.T @ Cy @ R)) / K
        fq = float_quadratic(inst)
        R0 = fq.A - A_best
        rows.append({"N": N, "trained_gap": trained_gap, "closed_form_gap": float(np.trace(R0.T @ Cy @ R0)) / K,
                     "training_excess": tr.result.final_loss})
    g = {r["N"]: r["trained_gap"] for r in rows}
    ok = g[10] < g[5] and g[10] < g[15]
    return _combine_at(tag, [Finding("trained_gap_minimal_at_N_equals_m", ok, {"rows": rows, "m": m, "tau": tau, "K": K},
                            None if ok else {"rows": rows}, "" if ok else "the trained gap is not smallest "
                                                                          "at N = m")])


FIG3 = Claim(
    id="yang2024.fig3",
    title="The closer N is to m, the better: gap (1/K)||yhat* - yhat_best||^2 versus N (Figure 3)",
    paper=PAPER,
    statement=(r"At $m=100$, $\tau=0.01$, the gap $\frac1K\|\hat y^\star-\hat y^{\mathrm{best}}\|_2^2$ for "
               r"$N\in[50,150]$ shows that the closer $N$ is to $m$, the better the transformer's "
               r"prediction (Sec. 3.2: the ridge (20) assumes the noise level $\frac mN\tau$)."),
    assumptions=("representations z_k ~ N(0, I_m); lambda ~ N(0, I_m); the gap in expectation over "
                 "lambda and the noise, averaged over representation matrices",),
    formulas=(),
    checks={"numeric": small_threads(fig3_numeric), "train": small_threads(fig3_train)},
    setting=SETTING,
)

# ==============================================================================================
# Figure 4: H < N stalls, H = N converges slowly
# ==============================================================================================
FIG4_SIZES = {"quick": {"K": 24, "d": 8, "m": 4, "N": 6}, "default": {"K": 40, "d": 20, "m": 4, "N": 6},
              "paper": {"K": 200, "d": 100, "m": 20, "N": 30}}
FIG4_STEPS = {"quick": 1500, "default": 3000, "paper": 20000}
# Starts per H: the stalling of H < N depends on the start (an H200 run with other starts saw
# H = 3, 5 stall where these descend), so each H is trained from several and every one is reported.
FIG4_STARTS = {"quick": 3, "default": 3, "paper": 2}


def _fig4_run(inst: Instance, H: int, start: int, steps: int, lr: float, ctx: Context) -> dict:
    """One training run from start number `start`: its loss curve relative to the initial loss."""
    tr = train_exact(inst, H, steps, lr, ctx.seed_for("fig4-model", H, *((start,) if start else ())),
                      ctx.device)  # start 0 is the single start used before
    L = tr.result.losses
    if tr.result.status == "diverged" or not L:
        return {"H": H, "start": start, "status": "diverged", "reason": tr.result.reason}
    d0 = L[0]
    return {"H": H, "start": start, "final_over_initial": L[-1] / d0,
            "half_over_initial": L[len(L) // 2] / d0, "last_half_factor": L[-1] / L[len(L) // 2],
            "curve": [L[i] / d0 for i in range(0, len(L), max(1, len(L) // 10))]}


def _stalled(run: dict) -> bool:
    return ("final_over_initial" in run and run["final_over_initial"] >= 1e-3
            and run["last_half_factor"] >= 0.5)


def _descending(run: dict) -> bool:
    return "final_over_initial" in run and (run["last_half_factor"] < 0.9 or run["final_over_initial"] < 1e-8)


def fig4_train(ctx: Context) -> TierResult:
    """Every start of every H < N must stall and every start at H = N keep descending: the
    figure's curves, read as statements about training from a random start (Thm 1 and Prop. 1
    give H >= N convergence almost surely)."""
    base = FIG4_SIZES[ctx.budget.name]
    N = base["N"]
    steps = FIG4_STEPS[ctx.budget.name]
    lr = 0.01 if ctx.budget.name != "paper" else 1e-3
    Hs = sorted({max(1, N // 2), N - 1, N, 2 * N})
    inst = make_instance(ctx, "fig4", {**base, "H": N}, FIG_TAU[ctx.budget.name])
    tag = _fig_stand_in(inst, "Fig. 4")
    runs = [_fig4_run(inst, H, s, steps, lr, ctx) for H in Hs for s in range(FIG4_STARTS[ctx.budget.name])]
    diverged = [r for r in runs if r.get("status") == "diverged"]
    if diverged:  # a diverged run neither stalls nor descends: nothing is decided
        return _combine_at(tag, [Finding("training", None, {"runs": runs}, reason=f"training diverged at H = "
                                f"{diverged[0]['H']}, start {diverged[0]['start']}: {diverged[0]['reason']}")])
    per_H = {H: [r for r in runs if r["H"] == H] for H in Hs}
    stalled = {H: f"{sum(map(_stalled, rs))} of {len(rs)} starts" for H, rs in per_H.items()}
    below = [r for r in runs if r["H"] < N]
    moving = [r for r in below if not _stalled(r)]
    f_stall = not moving
    at_N = per_H[N]
    flat_N = [r for r in at_N if not _descending(r)]
    f_N = not flat_N
    criteria = {"stalled": "final/initial >= 1e-3 and the last half of training gains less than 2x",
                "descending": "the last half of training gains more than 10% (or converged below 1e-8)"}
    protocol = (f"Adam lr {lr}, {steps} steps on the derived population loss, w = 0, Q ~ N(0, 1) "
                f"from {FIG4_STARTS[ctx.budget.name]} seeds per H")
    findings = [
        Finding("H_below_N_stalls", f_stall, {"stalled": stalled, "criteria": criteria},
                None if f_stall else {"instance": inst.as_dict(), "runs_not_stalled": moving, "lr": lr,
                                      "steps": steps, "protocol": protocol},
                "" if f_stall else
                f"H = {sorted({r['H'] for r in moving})} < N = {N} keeps descending from "
                f"{len(moving)} of {len(below)} starts (final/initial down to "
                f"{min(r.get('final_over_initial', float('inf')) for r in moving):.2g})"),
        Finding("H_equals_N_descends", f_N, {"stalled": stalled[N], "runs": at_N, "criteria": criteria},
                None if f_N else {"runs": flat_N}, "" if f_N else
                f"H = N stops descending from {len(flat_N)} of {len(at_N)} starts"),
    ]
    return _combine_at(tag, findings, {"runs": runs, "instance": inst.as_dict(), "protocol": protocol})


FIG4 = Claim(
    id="yang2024.fig4",
    title="Number of heads: H < N stalls far from the minimum, H = N keeps descending (Figure 4)",
    paper=PAPER,
    statement=(r"With $H<N$ the training loss stops descending far from its minimum; with $H=N$ it keeps "
               r"descending (slowly); larger $H$ converges (too large diverges)."),
    assumptions=("quick/default: CPU sizes with K > d (tokens linearly dependent, as K = 200 > d = 100)",),
    formulas=(),
    checks={"train": small_threads(fig4_train)},
    setting=SETTING,
)


# ==============================================================================================
# Figure 5: a 4-layer transformer converges with few heads
# ==============================================================================================
FIG5_BUDGET = {"quick": {"d_model": 16, "d_ff": 32, "steps": 250, "batch": 32, "Hs": (1, 4)},
               "default": {"d_model": 32, "d_ff": 64, "steps": 800, "batch": 64, "Hs": (1, 2, 4, 8)},
               "paper": {"d_model": 256, "d_ff": 512, "steps": 5000, "batch": 256, "Hs": (1, 2, 4, 8, 16, 32, 64)}}


def fig5_train(ctx: Context) -> TierResult:
    import time

    from models.softmax import DeepConfig, DeepICL

    fb = FIG5_BUDGET[ctx.budget.name]
    inst = _fig_instance(ctx, "fig5")
    paper_fb = FIG5_BUDGET["paper"]
    tag = _fig_stand_in(inst, "Fig. 5", extra="" if fb["d_model"] >= paper_fb["d_model"] else
                        f", a 4-layer encoder with d_model = {fb['d_model']}, d_ff = {fb['d_ff']} "
                        f"(the paper's 256, 512)")
    rt = runtime(ctx.device)
    dtype = torch.float32
    D = inst.dictionary.to(dtype=dtype, device=rt.device)
    D64 = inst.dictionary.to(dtype=torch.float64, device=rt.device)
    law = TaskLaw(inst.tau)
    fq = float_quadratic(inst)
    test = sample_tasks(law, inst.dictionary, 1000 if ctx.budget.name == "paper" else 4000,
                        torch.Generator().manual_seed(ctx.seed_for("fig5-test")))
    y_test = test.prompt_labels.to(dtype=dtype, device=rt.device)
    t_test = test.y.to(dtype=dtype, device=rt.device)
    trivial = float((0.5 * test.y ** 2).mean())
    rows = []
    for H in fb["Hs"]:
        cfg = DeepConfig(inst.d, inst.K, inst.N, H, layers=4, d_model=fb["d_model"], d_ff=fb["d_ff"])
        model = DeepICL(cfg, generator=torch.Generator().manual_seed(ctx.seed_for("fig5-model", H)),
                        dtype=dtype, device=rt.device)
        # drawn in float64 where the model runs (cpu: the same draws as a cpu generator)
        data_gen = rt.data_generator(ctx.seed_for("fig5-data", H))

        def loss_fn():
            tasks = sample_tasks(law, D64, fb["batch"], data_gen)
            y = tasks.prompt_labels.to(dtype=dtype)
            return (0.5 * (model(D.V_all, y) - tasks.y.to(dtype=dtype)) ** 2).mean()

        start = time.perf_counter()
        res = optimise(loss_fn, model.parameters(), method="adam", steps=fb["steps"], lr=1e-3, grad_tol=0.0)
        seconds = time.perf_counter() - start
        with torch.no_grad():   # in chunks: attention over K tokens is (batch, H, K, K)
            sq = [(0.5 * (model(D.V_all, y_test[i:i + 100]) - t_test[i:i + 100]) ** 2).sum()
                  for i in range(0, y_test.shape[0], 100)]
            test_loss = float(sum(sq)) / t_test.numel()
        rows.append({"H": H, "status": res.status, "test_loss": test_loss,
                     "excess_over_trivial_excess": (test_loss - fq.L_star) / (trivial - fq.L_star),
                     "seconds": seconds, "curve": res.summary(10)["curve"]})
    small = [r for r in rows if r["H"] < inst.N]
    ok = bool(small) and all(r["status"] != "diverged" and r["excess_over_trivial_excess"] <= 0.25 for r in small)
    return _combine_at(tag, [Finding("few_heads_converge", ok, {
        "rows": rows, "L_star_one_layer_optimum": fq.L_star, "trivial_predictor_loss": trivial,
        "criterion": "with H < N the 4-layer model removes >= 75% of the excess loss of the zero predictor "
                     "(excess measured against L*, the optimum of the 1-layer model's linear-in-y class)",
        "wall_clock": "each run's training seconds are reported; the paper's fixed-wall-clock comparison is not "
                      "reproducible on a shared CPU and decides nothing here"},
        None if ok else {"rows": rows, "instance": inst.as_dict()},
        "" if ok else "the 4-layer model with H < N does not converge")],
        {"instance": inst.as_dict(), "protocol": f"4-layer post-norm encoder, d_model {fb['d_model']}, "
                                                 f"d_ff {fb['d_ff']}, Adam lr 1e-3, {fb['steps']} steps on "
                                                 f"sampled tasks (batch {fb['batch']}), float32"})


FIG5 = Claim(
    id="yang2024.fig5",
    title="Deeper transformers do not need many heads (Figure 5)",
    paper=PAPER,
    statement=(r"Unlike the 1-layer model, a 4-layer transformer converges with small $H$ (here "
               r"$H<N$); within a fixed time, smaller $H$ reaches a lower loss."),
    assumptions=("standard 4-layer transformer (Vaswani et al.) reading the columns of E; sampled tasks",),
    formulas=(),
    checks={"train": small_threads(fig5_train)},
    setting=SETTING,
)

CLAIMS = [EQ8, EQ35, LEMMA1, LEMMA2, LEMMA4, LEMMA5, EQ33, EQ34, EQ36, EQ26, EQ27, PROP1, LEMMA6,
          LEMMA7, LEMMA8, LEMMA9, LEMMA10, THM1, THM2, FIG2, FIG3, FIG4, FIG5]
