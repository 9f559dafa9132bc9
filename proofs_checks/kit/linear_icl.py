"""In-context linear regression with Gaussian covariates: the setting ahn2023 and gatmiry2024 share.

x^(i), x_q ~ N(0, Sigma) i.i.d., w* ~ N(0, I) or N(0, Sigma^{-1}), y^(i) = <w*, x^(i)>, and the
prompt Z_0 = [[X, x_q], [y^T, 0]] (ahn2023 eq. (1)).  The setting is defined once here and read by
all three tiers: the symbolic prompt (for the moment kernel), exact and float instances of Sigma
(for the numeric tiers), and the torch sampling law (for training and Monte Carlo).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Mapping

import numpy as np
import sympy
import torch

from models.sampler import PromptLaw
from moments.blocks import BlockMat
from moments.tensor import (Mat, gaussian_matrix, gaussian_vector, identity, matrix, zeros)
from verify.errors import UsageError

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
@dataclass(frozen=True)
class SigmaSpec:
    """How Sigma is chosen: ``random`` (rotated, rational spectrum), ``identity``, ``diag``
    (given eigenvalues, U = I), ``rotated`` (given eigenvalues, random rational rotation) or
    ``matrix`` (given entries)."""

    kind: str = "random"
    values: tuple = ()

    def describe(self) -> str:
        if self.kind in ("random", "identity"):
            return self.kind
        return f"{self.kind}:{','.join(str(v) for v in self.values)}"


SIGMA_MAX_TEXT = 100_000  # characters of --sigma
SIGMA_MAX_DIM = 64  # rows of --sigma (the work estimate may allow fewer)
# a number: decimal or scientific (exponent of at most 3 digits), optionally over an integer
_NUMBER = re.compile(r"^[+-]?(\d{1,400}(\.\d{0,400})?|\.\d{1,400})([eE][+-]?\d{1,3})?"
                     r"(/\d{1,400})?$")


def _entry(text: str, raw: str) -> Fraction:
    """One number of --sigma, exactly; bounded so that no entry can take long to build."""
    t = text.strip()
    if not _NUMBER.match(t):
        raise UsageError(f"--sigma {_cut(raw)!r}: {_cut(t, 40)!r} is not a number such as 2, "
                         f"1/2, 0.25 or 1e-6")
    num, _, den = t.partition("/")
    try:
        value = Fraction(num) / Fraction(den) if den else Fraction(num)
    except ZeroDivisionError:
        raise UsageError(f"--sigma {_cut(raw)!r}: {t!r} divides by zero") from None
    return value


def _cut(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def parse_sigma(text: str | None) -> SigmaSpec | None:
    """Read ``--sigma``: ``identity``, ``diag:1,1/2,1/4``, ``rotated:1,1/2`` or ``[[2,1],[1,2]]``.

    The text is read without recursion (a matrix is two levels of brackets, nothing deeper),
    with its length, its size and every entry bounded, so that no input hangs or overflows the
    stack; anything else is a one-line UsageError."""
    if text is None:
        return None
    if len(text) > SIGMA_MAX_TEXT:
        raise UsageError(f"--sigma is {len(text)} characters long; at most {SIGMA_MAX_TEXT}")
    t = text.strip()
    if t in ("identity", "random"):
        return SigmaSpec(t)
    if t.startswith("diag:") or t.startswith("rotated:"):
        kind, _, body = t.partition(":")
        vals = tuple(_entry(v, text) for v in body.split(",") if v.strip())
        if not vals:
            raise UsageError(f"--sigma {_cut(text)!r} is not identity, diag:..., rotated:... or "
                             f"a matrix such as [[2,1],[1,2]] (no eigenvalues)")
        _dim_cap(len(vals), text)
        if any(v <= 0 for v in vals):
            raise UsageError(f"--sigma {_cut(text)!r}: eigenvalues must be positive "
                             f"(a covariance must be positive definite)")
        return SigmaSpec(kind, vals)
    mat = _matrix_rows(t, text)
    d = len(mat)
    if d == 0 or any(len(r) != d for r in mat):
        raise UsageError(f"--sigma {_cut(text)!r} is not a square matrix")
    _dim_cap(d, text)
    if any(mat[i][j] != mat[j][i] for i in range(d) for j in range(d)):
        raise UsageError(f"--sigma {_cut(text)!r} is not symmetric")
    m = sympy.Matrix(d, d, lambda i, j: sympy.Rational(mat[i][j].numerator, mat[i][j].denominator))
    if not _is_positive_definite(m):
        raise UsageError(f"--sigma {_cut(text)!r} is not positive definite")
    return SigmaSpec("matrix", tuple(tuple(r) for r in mat))


def _dim_cap(d: int, text: str) -> None:
    if d > SIGMA_MAX_DIM:
        raise UsageError(f"--sigma {_cut(text)!r} is {d}x{d}; at most {SIGMA_MAX_DIM}x"
                         f"{SIGMA_MAX_DIM} (and the work estimate may allow fewer)")


def _matrix_rows(t: str, raw: str) -> list[list[Fraction]]:
    """``[[a, b], [c, d]]`` as rows of exact numbers: exactly two levels of brackets."""
    bad = UsageError(f"--sigma {_cut(raw)!r} is not identity, diag:..., rotated:... or a matrix "
                     f"such as [[2,1],[1,2]]")
    body = re.sub(r"\s+", "", t)
    if not (body.startswith("[[") and body.endswith("]]")):
        raise bad
    rows = body[2:-2].split("],[")
    if any("[" in r or "]" in r for r in rows):
        raise bad
    return [[_entry(x, raw) for x in r.split(",")] for r in rows]


def _is_positive_definite(m: sympy.Matrix) -> bool:
    """Exactly, by the pivots of Gaussian elimination (all positive iff positive definite for a
    symmetric matrix), in Fractions: O(d^3), unlike d determinants."""
    d = m.shape[0]
    a = [[Fraction(int(x.p), int(x.q)) for x in m.row(i)] for i in range(d)]
    for k in range(d):
        if a[k][k] <= 0:
            return False
        for i in range(k + 1, d):
            f = a[i][k] / a[k][k]
            if f:
                for j in range(k, d):
                    a[i][j] -= f * a[k][j]
    return True


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
