"""The yang2024 setting, defined once for every tier: sizes per budget, the dictionary instances
(float64 and exact rational ones, tau symbolic), and the population loss (9) the moment kernel
derives from the model (8) and the task law (1), as a quadratic in each column of Ahat."""
from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Callable, Mapping, Sequence

import numpy as np
import sympy
import torch

from models.softmax import Dictionary, predict, random_dictionary
from moments.poly import Poly
from moments.tensor import gaussian_matrix, gaussian_vector, matrix, vector
from moments.wick import expectation
from verify.claim import Context, TierResult
from verify.errors import UsageError
from verify.evidence import step


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
# Assumption 2 (B_k B_k^T >= zeta_0 > 0) needs B_k = Zbar C_k (N x H) of full row rank: H >= N
# (Prop. 1); the claims under Thm. 1's assumptions refuse --size outside it
HEADS_COVER_PROMPT = ("H >= N",)


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


def budget_and_paper_instances(ctx: Context) -> dict[str, Instance]:
    """The budget's instance and one at the paper's sizes and noise level (the float tiers' pair)."""
    return {"budget": make_instance(ctx),
            "paper_sizes": make_instance(ctx, "paper-size", BUDGET_SIZES["paper"], BUDGET_TAU["paper"])}


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


def token_values(inst: ExactInstance, k: int, a) -> dict:
    """The values of a token formula's symbols for token k at Ahat_k = a (e_k for a prompt token)."""
    vals = {"Z": inst.Z, "z_k": inst.Zhat[:, k], "Ahat_k": a, **_sizes_scalars(inst.m, inst.N)}
    if k < inst.N:
        vals["e_k"] = inst.e(k)
    return vals


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


def token_loss(G: sympy.Matrix, B: sympy.Matrix, c: list, a: sympy.Matrix, k: int) -> sympy.Expr:
    """L_k(a) = a^T G a / 2 - a^T b_k + c_k / 2 from ``exact_quadratic``'s (G, B, c)."""
    return (a.T * G * a)[0, 0] / 2 - (a.T * B[:, k])[0, 0] + c[k] / 2


def token_minimum(Ginv: sympy.Matrix, B: sympy.Matrix, c: list, k: int) -> sympy.Expr:
    """min_a L_k(a) = c_k / 2 - b_k^T G^{-1} b_k / 2 (at a = G^{-1} b_k)."""
    return c[k] / 2 - (B[:, k].T * Ginv * B[:, k])[0, 0] / 2


def quadratic_loss(G: sympy.Matrix, B: sympy.Matrix, c: list, Ahat: sympy.Matrix) -> sympy.Expr:
    """The derived loss L(Ahat) = (1/K) sum_k L_k(Ahat_{:,k}) (eq. (9))."""
    return sum(token_loss(G, B, c, Ahat[:, k], k) for k in range(len(c))) / len(c)


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
    mins = [sympy.cancel(token_minimum(Ginv, B, c, k)) for k in range(inst.K)]
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
        """L(Ahat) - L* = (1/2K) tr((Ahat - A)^T G (Ahat - A)), the numerically stable form; for
        a batch of coefficient matrices (R, N, K), one value per matrix."""
        G = torch.tensor(self.G, dtype=dtype, device=device)
        A = torch.tensor(self.A, dtype=dtype, device=device)
        K = self.K

        def gap(Ahat: torch.Tensor) -> torch.Tensor:
            R = Ahat - A
            terms = R * (G @ R)
            return 0.5 * (terms.sum() if terms.dim() == 2 else terms.sum((-2, -1))) / K

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
