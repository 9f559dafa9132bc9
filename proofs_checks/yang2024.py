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
import math
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import sympy
import torch
from sympy.matrices.expressions.matexpr import MatrixExpr

from models.device import runtime
from models.softmax import (Dictionary, SoftmaxConfig, SoftmaxICL, TaskLaw, attention_weights,
                            coefficient_matrix, full_prediction, head_matrix, predict,
                            random_dictionary, sample_tasks, softmax_columns)
from models.trainers import optimise
from moments.montecarlo import Estimate, estimate, z_critical
from moments.poly import Poly
from moments.tensor import Mat, gaussian_matrix, gaussian_vector, identity, matrix, vector
from moments.wick import canonical, expectation
from verify.claim import Claim, Context, Correction, TierResult
from verify.errors import UsageError
from verify.evidence import Finding, combine, step
from verify.formulas import FormulaSymbol, NamedFormula, compile_formula, formula_value

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


def exact_quadratic(inst: ExactInstance) -> tuple[sympy.Matrix, sympy.Matrix, list]:
    """(G, B, c) with L_k(a) = a^T G a / 2 - a^T b_k + c_k / 2, read off the derived polynomials.

    Each L_k is evaluated exactly at a vector of symbols a; G is its Hessian, b_k = -grad L_k(0)
    and c_k = 2 L_k(0).
    """
    tl = token_losses()
    N, K = inst.N, inst.K
    sc = _sizes_scalars(inst.m, N)
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
    return G, sympy.Matrix.hstack(*B_cols), c


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
        return M.inv() if exact else np.linalg.inv(M)
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
# Formula symbols shared by the claims
# ==============================================================================================
_m = FormulaSymbol("m", description="number of basis functions f_1..f_m")
_N = FormulaSymbol("N", description="number of labelled tokens in a prompt")
_K = FormulaSymbol("K", description="number of dictionary tokens")
_H = FormulaSymbol("H", description="number of attention heads")
_d = FormulaSymbol("d", description="token dimension")
_tau = FormulaSymbol("tau", positive=True, description="noise level, eps_k ~ N(0, tau I_m)")
_Z = FormulaSymbol("Z", "matrix", ("m", "N"), "Z = (f(v_1), ..., f(v_N)) (eq. (12))")
_Zhat = FormulaSymbol("Zhat", "matrix", ("m", "K"), "Zhat = (f(v_1), ..., f(v_K)) = (Z, Z^Q)")
_J = FormulaSymbol("J", "matrix", ("N", "K"), "(I_N, 0), the N x K matrix of eq. (34)")
_zk = FormulaSymbol("z_k", "matrix", ("m", "1"), "z_k = f(v_k)")
_ek = FormulaSymbol("e_k", "matrix", ("N", "1"), "the one-hot e_k (k <= N)")
_ak = FormulaSymbol("Ahat_k", "matrix", ("N", "1"), "the k-th column of Ahat(theta) (eq. (35))")
_Ahat = FormulaSymbol("Ahat", "matrix", ("N", "K"), "Ahat(theta) of eq. (35)")
_y = FormulaSymbol("y", "matrix", ("N", "1"), "the prompt labels (y_1..y_N)")

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
                 (_m, _N, _tau, _Z, _zk, _ek, _ak), equation="(33), k in [N]", shape=("N", "1"),
                 description="delta_k for a prompt token, as printed"),
    NamedFormula("delta_query", f"Ahat_k - Inverse{G_TEXT}*z_k",
                 (_m, _N, _tau, _Z, _zk, _ak), equation="(33), k in [K] minus [N]", shape=("N", "1"),
                 description="delta_k for a query token, as printed"),
    NamedFormula("c_prompt", f"-trace((Z.T*z_k + m*tau*e_k).T*Inverse{G_TEXT}*(Z.T*z_k + m*tau*e_k))"
                             " + trace(z_k.T*z_k) + m*tau",
                 (_m, _N, _tau, _Z, _zk, _ek), equation="L* in Lemma 5 (first sum), c_k of (78)",
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
    """Compare the paper's per-token loss (1/2)||Zbar delta_k||^2 + c_k/2 with the derived L_k."""
    findings = []
    per = {"prompt": {"identity": [], "constant": []}, "query": {"identity": [], "constant": []}}
    fails: dict = {}
    for inst in insts:
        G, B, c = exact_quadratic(inst)
        Ginv = G.inv()
        a = sympy.Matrix(sympy.symbols(f"a0:{inst.N}"))
        for k in range(inst.K):
            kind = "prompt" if k < inst.N else "query"
            derived = sympy.expand((a.T * G * a)[0, 0] / 2 - (a.T * B[:, k])[0, 0] + c[k] / 2)
            derived_min = sympy.cancel(c[k] / 2 - (B[:, k].T * Ginv * B[:, k])[0, 0] / 2)
            vals = _token_values(inst, k, a)
            cval, why_c = _safe_exact(F[f"c_{kind}"], vals)
            if cval is None:
                per[kind]["constant"].append({"instance": (inst.m, inst.N), "k": k, "error": why_c})
                fails.setdefault(f"L_star_{kind}", (None, why_c))
            else:
                diff = sympy.cancel(cval / 2 - derived_min)
                ok = diff == 0
                per[kind]["constant"].append({"instance": (inst.m, inst.N), "k": k, "agree": ok})
                if not ok and f"L_star_{kind}" not in fails:
                    fails[f"L_star_{kind}"] = (False, {
                        "instance": inst.as_dict(), "token": k + 1, "kind": kind,
                        "paper_c_over_2": str(sympy.factor(cval / 2)),
                        "derived_min_L_k": str(sympy.factor(derived_min)),
                        "paper_minus_derived": str(sympy.factor(diff)),
                        "at_tau_1/4": {"paper": _rational_str(_at_tau(cval / 2)),
                                       "derived": _rational_str(_at_tau(derived_min))}})
            dval, why_d = _safe_exact(F[f"delta_{kind}"], vals)
            Zsq, why_z = _safe_exact(F["Zbar_sq"], vals)
            if dval is None or Zsq is None or cval is None:
                per[kind]["identity"].append({"instance": (inst.m, inst.N), "k": k,
                                              "error": why_d or why_z or why_c})
                fails.setdefault(f"loss_identity_{kind}", (None, why_d or why_z or why_c))
                continue
            paper = (dval.T * Zsq * dval)[0, 0] / 2 + cval / 2
            diff = sympy.cancel(sympy.together(sympy.expand(paper) - derived))
            ok = diff == 0
            per[kind]["identity"].append({"instance": (inst.m, inst.N), "k": k, "agree": ok})
            if not ok and f"loss_identity_{kind}" not in fails:
                at0 = {s: 0 for s in a}
                fails[f"loss_identity_{kind}"] = (False, {
                    "instance": inst.as_dict(), "token": k + 1, "kind": kind,
                    "paper_minus_derived": str(sympy.factor(diff)),
                    "at_Ahat_k_0_tau_1/4": {"paper": _rational_str(_at_tau(paper.subs(at0))),
                                            "derived": _rational_str(_at_tau(derived.subs(at0)))}})
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
                findings.append(Finding(name, True, {"tokens_checked": len(rows)}))
    return findings


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
        model.w.copy_(w_scale * torch.randn(model.w.shape, generator=gen, dtype=model.w.dtype))
    return model


def _mc_loss(inst: Instance, Ahat: torch.Tensor, law: TaskLaw, samples: int, seed: int,
             model: SoftmaxICL | None = None, chunk: int = 20_000) -> np.ndarray:
    """Per-task losses (1/2K) sum_k (yhat_k - y_k)^2 with yhat from the torch model (8)."""
    gen = torch.Generator().manual_seed(seed)
    out = []
    done = 0
    D = inst.dictionary
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
EQ33_FORMULAS = tuple(f for f in LEMMA5_FORMULAS if f.name in ("delta_prompt", "delta_query"))


def eq33_symbolic(ctx: Context) -> TierResult:
    F = ctx.formulas
    insts = exact_instances(ctx)
    findings = [dimension_finding(ctx, ["delta_prompt", "delta_query"])]
    for kind in ("prompt", "query"):
        rows, bad, undecided = [], None, None
        for inst in insts:
            Astar, _ = exact_optimum(inst)
            ks = range(inst.N) if kind == "prompt" else range(inst.N, inst.K)
            for k in ks:
                target, why = _safe_exact(F[f"delta_{kind}"], _token_values(inst, k, sympy.zeros(inst.N, 1)))
                if target is None:
                    undecided = why
                    break
                target = -sympy.Matrix(target)
                diff = (target - Astar[:, k]).applyfunc(sympy.cancel)
                ok = diff == sympy.zeros(inst.N, 1)
                rows.append({"instance": (inst.m, inst.N), "token": k + 1, "agree": ok})
                if not ok and bad is None:
                    i = _first_nonzero(diff)[0]
                    bad = {"instance": inst.as_dict(), "token": k + 1, "entry": i,
                           "paper_target": str(sympy.factor(target[i])),
                           "derived_minimiser": str(sympy.factor(Astar[i, k])),
                           "at_tau_1/4": {"paper": _rational_str(_at_tau(target[i])),
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
        step("Comparison with (33)", r"\delta_k^\theta\big|_{\hat a_k = A_{:,k}} \overset{?}{=} 0",
             "(33) must vanish exactly at the minimiser of L_k, so that L -> L* iff delta_k -> 0 (37)."),
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
        vals = {"Z": D.Z.numpy(), "z_k": D.Zhat.numpy()[:, [k]], "Ahat_k": np.zeros((inst.N, 1)),
                "m": inst.m, "N": inst.N, "tau": inst.tau, "e_k": np.eye(inst.N)[:, [min(k, inst.N - 1)]]}
        try:
            target = -np.asarray(float_value(F[f"delta_{kind}"], vals)).reshape(-1)
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
        G, B, c = exact_quadratic(inst)
        Ah = sympy.Matrix(inst.N, inst.K, lambda i, j: sympy.Symbol(f"a_{i}_{j}"))
        derived = sum(((Ah[:, k].T * G * Ah[:, k])[0, 0] / 2 - (Ah[:, k].T * B[:, k])[0, 0] + c[k] / 2)
                      for k in range(inst.K)) / inst.K
        vals = {**_exact_matrix_values(inst), "Ahat": Ah}
        ex, why1 = _safe_exact(F["L_excess"], vals)
        ls, why2 = _safe_exact(F["L_star"], vals)
        if ex is None or ls is None:
            undecided = why1 or why2
            break
        diff = sympy.cancel(sympy.together(sympy.expand(ex + ls - derived)))
        rows.append({"instance": (inst.m, inst.N), "agree": diff == 0})
        if diff != 0:
            zero = {s: 0 for s in Ah}
            fail = {"instance": inst.as_dict(), "paper_minus_derived": str(sympy.factor(diff)),
                    "at_Ahat_0_tau_1/4": {"paper": _rational_str(_at_tau((ex + ls).subs(zero))),
                                          "derived": _rational_str(_at_tau(derived.subs(zero)))}}
            break
    if undecided:
        findings.append(Finding("loss_identity", None, {"instances": rows},
                                reason=f"cannot evaluate: {undecided}"))
    else:
        findings.append(Finding("loss_identity", fail is None, {"instances": rows}, fail,
                                "" if fail is None else "L_excess + L_star differs from the derived "
                                                        "population loss"))
    steps = _loss_steps() + [
        step("Total loss", r"\mathcal L(\hat A) = \frac1K\sum_{k=1}^K \mathcal L_k(\hat a_k)",
             "eq. (9): the average over the K tokens, with a symbolic Ahat (every entry a symbol)."),
        step("Comparison", r"\mathcal L(\hat A) \overset{?}{=} \frac1{2K}\|\bar Z(\hat A - A)\|_F^2 "
             r"+ \mathcal L^\star", "Exact identity in the entries of Ahat and tau."),
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
_Ck = FormulaSymbol("C_k", "matrix", ("N", "H"), "C_k = softmax(V^T Q_1 v_k, ..., V^T Q_H v_k) (13)")
_omk = FormulaSymbol("omega_k", "matrix", ("H", "1"), "(w_{1,k}, ..., w_{H,k})^T")

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
    x = sympy.expand(x)
    if x == 0:
        return True
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
        y = torch.randn(inst.N, generator=gen, dtype=torch.float64)
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
_sjk = FormulaSymbol("s_jk", description="s_{jk}^h = softmax(V^T Q_h v_k)_j")
_vj = FormulaSymbol("v_j", "matrix", ("d", "1"), "the prompt token v_j")
_V = FormulaSymbol("V", "matrix", ("d", "N"), "the prompt tokens (v_1, ..., v_N) (eq. (3))")
_sk = FormulaSymbol("s_k", "matrix", ("N", "1"), "s_k^h (eq. (28))")
_vk = FormulaSymbol("v_k", "matrix", ("d", "1"), "the token v_k")

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
        Q = 1.5 * torch.randn(inst.d, inst.d, generator=gen, dtype=torch.float64)
        for k in range(inst.K):
            vk = D.V_all[:, k]
            jac = torch.autograd.functional.jacobian(
                lambda q: torch.softmax(V.T @ q @ vk, 0), Q)          # (N, d, d)
            s = torch.softmax(V.T @ Q @ vk, 0)
            for j in range(inst.N):
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
LEMMA2_FORMULAS = (
    NamedFormula("C", "2", (), equation="(30)",
                 description="||softmax(xi_1) - softmax(xi_2)||_1 <= C ||xi_1 - xi_2||_inf"),
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
    # sharpness: l = 2, xi_1 = (t, -t), xi_2 = 0: ratio -> 1 as t -> 0
    t = sympy.Symbol("t", positive=True)
    s2 = softmax_columns(sympy.Matrix([t, -t]))
    ratio = (abs(s2[0] - sympy.Rational(1, 2)) + abs(s2[1] - sympy.Rational(1, 2))) / t
    sharp = sympy.limit(ratio.rewrite(sympy.exp), t, 0, "+")
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
                            "" if ok else f"C = {C} is below the supremum 1 of the ratio"))
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
        x1 = torch.randn(128, l, generator=gen, dtype=torch.float64) * 3
        x2 = x1 + torch.randn(128, l, generator=gen, dtype=torch.float64) * 0.1
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
                  "256 random pairs per length"},
        None if ok else {"pair": best_pair, "paper_C": C, "seed": ctx.seed},
        "" if ok else f"a pair has ratio {best:.4f} > C = {C}")])


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
_lam = FormulaSymbol("lam", "matrix", ("m", "1"), "the coefficient vector lambda")
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

CLAIMS = [EQ8, EQ35, LEMMA1, LEMMA2, LEMMA4, LEMMA5, EQ33, EQ34, EQ36]
