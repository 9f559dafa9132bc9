"""In-context linear regression with Gaussian covariates: the setting ahn2023 and gatmiry2024 share.

x^(i), x_q ~ N(0, Sigma) i.i.d., w* ~ N(0, I) or N(0, Sigma^{-1}), y^(i) = <w*, x^(i)>, and the
prompt Z_0 = [[X, x_q], [y^T, 0]] (ahn2023 eq. (1)).  The setting is defined once here and read by
all three tiers: the symbolic prompt (for the moment kernel), exact and float instances of Sigma
(for the numeric tiers), and the torch sampling law (for training and Monte Carlo).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Mapping

import numpy as np
import sympy
import torch

from models.progress import Progress
from models.sampler import PromptLaw, Prompts, sample_prompts
from models.trainers import optimise
from moments.blocks import BlockMat
from moments.tensor import (Mat, gaussian_matrix, gaussian_vector, identity, matrix, zeros)
from verify.errors import UsageError
from verify.sigma import SigmaSpec

W_PRIORS = ("identity", "sigma_inverse")


@dataclass(frozen=True)
class SymbolicPrompt:
    """Z_0, the mask M and the random letters of the setting, as symbolic block matrices."""

    Z: BlockMat
    mask: BlockMat
    X: Mat
    w: Mat
    xq: Mat
    Sigma: Mat

    @property
    def target(self) -> Mat:
        """The query label w*^T x_q."""
        return self.w.T @ self.xq


def symbolic_prompt(w_prior: str = "identity", isotropic: bool = False) -> SymbolicPrompt:
    """The prompt of eq. (1) over letters X ~ N(0, Sigma) columns, w ~ N(0, I | Sigma^{-1}), x_q."""
    if w_prior not in W_PRIORS:
        raise ValueError(f"unknown prior {w_prior!r}")
    Sigma = identity("d") if isotropic else matrix("Sigma", "d", "d", symmetric=True)
    cov = None if isotropic else Sigma
    X = gaussian_matrix("X", "d", "n", row_cov=cov)
    if w_prior == "identity" or isotropic:
        w = gaussian_vector("w", "d")
    else:
        w = gaussian_vector("w", "d", cov=matrix("Sigma_inv", "d", "d", symmetric=True,
                                                 latex="\\Sigma^{-1}"))
    xq = gaussian_vector("x_q", "d", cov=cov)
    y = X.T @ w
    Z = BlockMat([[X, xq], [y.T, zeros("1", "1")]])
    M = BlockMat([[identity("n"), zeros("n", "1")], [zeros("1", "n"), zeros("1", "1")]])
    return SymbolicPrompt(Z, M, X, w, xq, Sigma)


# ----------------------------------------------------------------------------------------------
# Covariances: specifications, exact instances, float instances
# ----------------------------------------------------------------------------------------------
def cayley_orthogonal(d: int, rng: np.random.Generator) -> sympy.ImmutableMatrix:
    """An exactly orthogonal rational matrix (I - K)(I + K)^{-1} from a random rational skew K."""
    K = sympy.zeros(d, d)
    for i in range(d):
        for j in range(i + 1, d):
            v = sympy.Rational(int(rng.integers(-4, 5)), int(rng.integers(1, 4)))
            K[i, j], K[j, i] = v, -v
    I = sympy.eye(d)
    return sympy.ImmutableMatrix((I - K) * (I + K).inv())


_SPECTRUM = [sympy.Rational(v) for v in ("1/4", "1/3", "1/2", "2/3", "1", "3/2", "2", "3")]


@dataclass(frozen=True)
class Instance:
    """A concrete (n, d, Sigma = U diag(eigs) U^T), exact where the spec allows."""

    n: int
    d: int
    sigma_exact: sympy.ImmutableMatrix
    U_exact: sympy.ImmutableMatrix | None
    eigs_exact: tuple | None
    spec: str
    extra: Mapping[str, int] = field(default_factory=dict)

    @property
    def sigma(self) -> np.ndarray:
        return np.array(self.sigma_exact.tolist(), dtype=float)

    def spectral(self, digits: int = 40) -> tuple[sympy.ImmutableMatrix, tuple]:
        """(U, eigenvalues) with Sigma = U diag(eigenvalues) U^T: the exact ones where the spec
        gives them, else (a ``--sigma`` matrix, whose eigenvalues are algebraic) ``digits``-digit
        floats from mpmath's symmetric eigensolver, for the float tiers."""
        if self.U_exact is not None:
            return self.U_exact, tuple(self.eigs_exact)
        import mpmath

        with mpmath.workdps(digits + 10):
            exact = lambda v: mpmath.mpf(v.p) / v.q  # noqa: E731 - a rational entry
            vals, vecs = mpmath.eigsy(mpmath.matrix([[exact(sympy.Rational(v)) for v in row]
                                                     for row in self.sigma_exact.tolist()]))
            U = sympy.ImmutableMatrix(self.d, self.d, lambda i, j: sympy.Float(vecs[i, j], digits))
            eigs = tuple(sympy.Float(vals[i], digits) for i in range(self.d))
        return U, eigs

    @property
    def eig(self) -> tuple[np.ndarray, np.ndarray]:
        """(eigenvalues, U) in float64, from the exact ones when they are known."""
        if self.U_exact is not None:
            return (np.array([float(v) for v in self.eigs_exact]),
                    np.array(self.U_exact.tolist(), dtype=float))
        vals, vecs = np.linalg.eigh(self.sigma)
        return vals, vecs

    def sigma_torch(self) -> torch.Tensor:
        return torch.tensor(self.sigma, dtype=torch.float64)

    def as_dict(self) -> dict:
        out = {"n": self.n, "d": self.d, "sigma_spec": self.spec,
               "Sigma": [[str(v) for v in row] for row in self.sigma_exact.tolist()]}
        if self.eigs_exact is not None:
            out["eigenvalues"] = [str(v) for v in self.eigs_exact]
            out["U"] = [[str(v) for v in row] for row in self.U_exact.tolist()]
        out.update(self.extra)
        return out


def make_instance(n: int, d: int, spec: SigmaSpec | None, rng: np.random.Generator,
                  extra: Mapping[str, int] | None = None) -> Instance:
    """Sigma for sizes (n, d) following ``spec`` (default: random rotation, rational spectrum)."""
    spec = spec or SigmaSpec("random")
    if spec.kind == "identity":
        U = sympy.ImmutableMatrix(sympy.eye(d))
        eigs = tuple(sympy.Integer(1) for _ in range(d))
    elif spec.kind == "random":
        U = cayley_orthogonal(d, rng)
        eigs = tuple(_SPECTRUM[int(i)] for i in rng.integers(0, len(_SPECTRUM), size=d))
    elif spec.kind in ("diag", "rotated"):
        eigs = tuple(sympy.Rational(v.numerator, v.denominator) for v in spec.values)
        U = (sympy.ImmutableMatrix(sympy.eye(len(eigs))) if spec.kind == "diag"
             else cayley_orthogonal(len(eigs), rng))
    else:
        m = sympy.ImmutableMatrix([[sympy.Rational(v.numerator, v.denominator) for v in row]
                                   for row in spec.values])
        return Instance(n, m.shape[0], m, None, None, spec.describe(), dict(extra or {}))
    if len(eigs) != d:
        d = len(eigs)
    sigma = sympy.ImmutableMatrix(U * sympy.diag(*eigs) * U.T)
    return Instance(n, d, sigma, U, eigs, spec.describe(), dict(extra or {}))


def resolve_sizes(defaults: Mapping[str, int], overrides: Mapping[str, int],
                  spec: SigmaSpec | None) -> dict[str, int]:
    """Budget sizes with the user's ``--size`` overrides; d follows an explicit Sigma."""
    sizes = dict(defaults)
    for k, v in overrides.items():
        if k not in sizes:
            raise UsageError(f"--size {k}: this setting has sizes {', '.join(sorted(sizes))}")
        sizes[k] = v
    explicit_d = _spec_dim(spec)
    if explicit_d is not None:
        if "d" in overrides and overrides["d"] != explicit_d:
            raise UsageError(f"--size d={overrides['d']} conflicts with a {explicit_d}x{explicit_d} --sigma")
        sizes["d"] = explicit_d
    for k, v in sizes.items():
        if not isinstance(v, int) or v <= 0:
            raise UsageError(f"size {k}={v} is impossible: sizes must be positive integers")
    return sizes


def _spec_dim(spec: SigmaSpec | None) -> int | None:
    if spec is None or spec.kind in ("random", "identity"):
        return None
    return len(spec.values)


def prompt_law(inst: Instance, w_prior: str) -> PromptLaw:
    sigma = inst.sigma_torch()
    w_cov = torch.linalg.inv(sigma) if w_prior == "sigma_inverse" else None
    return PromptLaw(sigma=sigma, n=inst.n, w_cov=w_cov)


# The largest sizes a claim of this setting finishes in about ten minutes per budget on a 2-core
# CPU (ahn2023 Thm. 1, the heaviest per size, at --budget quick: numeric 83 s at d = 32, 155 s at
# n = 300, about n^2 d^3; symbolic at a rotated --sigma, exact: 35 s at d = 6, 170 s at d = 8,
# 266 s at d = 12; the larger budgets draw 5 and 25 times the samples).
_SYMBOLIC_SIGMA = 12
LINEAR_WORK_CAPS = {
    "quick": {"n": 400, "d": 40, "L": 8, "layers": 8, "k": 8, "symbolic:sigma": _SYMBOLIC_SIGMA},
    "default": {"n": 200, "d": 24, "L": 8, "layers": 8, "k": 8,
                "symbolic:sigma": _SYMBOLIC_SIGMA},
    "paper": {"n": 400, "d": 40, "L": 8, "layers": 8, "k": 8, "symbolic:sigma": _SYMBOLIC_SIGMA},
}


@dataclass(frozen=True)
class LinearICLSetting:
    """The data law and the sizes each budget uses; validates the user's sizes and Sigma."""

    w_prior: str
    sizes: Mapping[str, Mapping[str, int]]
    work_caps: Mapping[str, Mapping[str, int]] = field(default_factory=lambda: LINEAR_WORK_CAPS)
    # what the claim's checks use instead of a --sigma they cannot take ("": they take it)
    fixed_sigma: str = ""

    def validate(self, sizes: Mapping[str, int], sigma: SigmaSpec | None) -> None:
        resolve_sizes(self.sizes["quick"], sizes, sigma)

    def instance(self, budget: str, sizes: Mapping[str, int], sigma: SigmaSpec | None,
                 rng: np.random.Generator) -> Instance:
        s = resolve_sizes(self.sizes[budget], sizes, sigma)
        extra = {k: v for k, v in s.items() if k not in ("n", "d")}
        return make_instance(s["n"], s["d"], sigma, rng, extra)

    def describe(self) -> dict:
        prior = "N(0, I_d)" if self.w_prior == "identity" else "N(0, Sigma^{-1})"
        return {"x": "N(0, Sigma)", "w*": prior, "y": "<w*, x>", "sizes": dict(self.sizes)}


def sampled_adam(ctx, model, law: PromptLaw, steps: int, batch: int, rt, data_seed: int):
    """Adam (lr 0.01) on the squared error of ``model``'s prediction of y_q over fresh prompts of
    ``law`` each step (the real forward pass, prompts drawn on the run's device from
    ``data_seed``); the optimiser's result."""
    data = rt.data_generator(data_seed)

    def sampled():
        pr = sample_prompts(law, batch, data, dtype=rt.dtype, device=rt.device)
        return ((model.predict(pr.Z()) - pr.yq) ** 2).mean()

    with Progress(steps, f"{ctx.claim_id} sampled-prompt Adam", ctx.progress) as bar:
        return optimise(sampled, model.parameters(), method="adam", steps=steps, lr=0.01,
                        progress=bar.callback())


def conditional_loss(model, X: torch.Tensor, Lx: torch.Tensor, Lw: torch.Tensor) -> torch.Tensor:
    """E[e^2 | X] for each sampled X (B, d, n), through the real forward pass ``model.predict``.

    Given the in-context covariates X the error e is bilinear in (w*, x_q) (the masked query
    column never feeds back), so E[e^2 | X] = sum_{j,k} e(w* = Lw e_j, x_q = Lx e_k)^2 with
    Cov w* = Lw Lw^T, Cov x_q = Lx Lx^T: d^2 forward passes per X instead of sampled w*, x_q
    (Rao-Blackwellisation; the high-degree error otherwise has a heavy right tail)."""
    B, d, n = X.shape
    Xr = X.repeat_interleave(d * d, 0)
    idx = torch.arange(d * d)
    w = Lw.T[idx // d].repeat(B, 1)
    xq = Lx.T[idx % d].repeat(B, 1)
    y = torch.einsum("bdn,bd->bn", Xr, w)
    yq = torch.einsum("bd,bd->b", xq, w)
    pr = Prompts(Xr, xq, w, y, yq)
    e2 = (model.predict(pr.Z()) - yq) ** 2
    return e2.reshape(B, d * d).sum(1)


def law_factors(inst: Instance, w_prior: str) -> tuple[torch.Tensor, torch.Tensor]:
    """(L_x, L_w): Cov x = L_x L_x^T, Cov w* = L_w L_w^T (Cholesky) of the instance's law."""
    return prompt_law(inst, w_prior).factors()
