"""The xie2025 setting, defined once for every tier: the data law, the symbolic prompt, the sizes.

w ~ N(w*, I_d) (the prior of Sec. 2, non-zero mean w*), x_i, x_q ~ N(0, I_d) i.i.d., y_i = <w, x_i>,
C context examples, and the prompt E = [[X, x_q], [y^T, y_q]] (eq. (2), X the d x C matrix of
context columns).  The query guess y_q is 0 (Secs. 3, 5.1.1-5.1.2), v^T x_q (y_q-LSA, eq. (11),
v the trainable w of Def. 3) or v^T x_q + beta (the y_q_guess / y_q_bias split of Sec. 5.1.3).

The numeric and train tiers use the paper's prior mean w* = (2, ..., 2) (Table 1) scaled by the
size ``w_entry`` (default 2), d and C from the budget (paper: d = C = 10).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

import numpy as np
import sympy
import torch

from moments.blocks import BlockMat
from moments.tensor import (Mat, gaussian_matrix, gaussian_vector, identity, matrix, scalar,
                            vector, zeros)
from verify.errors import UsageError
from verify.evidence import smaller_than_paper

C_SYM = sympy.Symbol("C", positive=True, integer=True)
D_SYM = sympy.Symbol("d", positive=True, integer=True)
S_SYM = sympy.Symbol("s", nonnegative=True)  # ||w*||^2
BETA = sympy.Symbol("beta")  # the query guess offset y_q_bias
GUESSES = ("zero", "linear", "affine")


def w_star_letter() -> Mat:
    return vector("w_star", latex=r"w_\star")


@dataclass(frozen=True)
class SymbolicPrompt:
    """E of eq. (2) over random letters X (d x C), w ~ N(w*, I), x_q, and its mask W^M."""

    E: BlockMat
    mask: BlockMat
    X: Mat
    w: Mat
    xq: Mat
    yq: Mat

    @property
    def target(self) -> Mat:
        """The query label y = w^T x_q."""
        return self.w.T @ self.xq

    @property
    def context(self) -> BlockMat:
        """The context tokens z_i = [x_i; y_i] as the columns of a (d+1) x C block matrix."""
        return BlockMat([[self.E[0, 0]], [self.E[1, 0]]])

    def gram(self) -> BlockMat:
        """G = (1/C) E W^M E^T = (1/C) sum_i z_i z_i^T (App. A.2)."""
        return self.E @ self.mask @ self.E.T / C_SYM


def symbolic_prompt(guess: str = "zero") -> SymbolicPrompt:
    """The prompt with y_q = 0, v^T x_q or v^T x_q + beta (``guess``)."""
    if guess not in GUESSES:
        raise ValueError(f"unknown query guess {guess!r}")
    X = gaussian_matrix("X", "d", "C")
    w = gaussian_vector("w", "d", mean=w_star_letter(), latex=r"\hat w")
    xq = gaussian_vector("x_q", "d")
    if guess == "zero":
        yq = zeros("1", "1")
    else:
        yq = vector("v").T @ xq
        if guess == "affine":
            yq = yq + scalar(BETA)
    E = BlockMat([[X, xq], [(X.T @ w).T, yq]])
    M = BlockMat([[identity("C"), zeros("C", "1")], [zeros("1", "C"), zeros("1", "1")]])
    return SymbolicPrompt(E, M, X, w, xq, yq)


def prompt_with_guess(yq: Mat) -> SymbolicPrompt:
    """The prompt of eq. (2) with an arbitrary 1 x 1 query guess ``yq`` (e.g. w*^T x_q, eq. (9))."""
    sp = symbolic_prompt("zero")
    E = BlockMat([[sp.X, sp.xq], [(sp.X.T @ sp.w).T, yq]])
    return SymbolicPrompt(E, sp.mask, sp.X, sp.w, sp.xq, yq)


def head_letters(tag: str = "", full: bool = False) -> tuple[BlockMat, BlockMat]:
    """A head's (P, Q) = (W^P W^V, (W^K)^T W^Q) as letters.

    P's last row is b = [b_x; b_y] (its first d rows are letters only with ``full``, zero otherwise:
    App. A.1 shows they do not enter); Q = A = [[A_xx, a_xy], [a_yx^T, a_yy]].
    """
    b_y, a_yy = sympy.symbols(f"b_y{tag} a_yy{tag}")
    if full:
        top = [matrix(f"P_xx{tag}"), vector(f"p_xy{tag}")]
    else:
        top = [zeros("d", "d"), zeros("d", "1")]
    P = BlockMat([top, [vector(f"b_x{tag}").T, scalar(b_y)]])
    Q = BlockMat([[matrix(f"A_xx{tag}"), vector(f"a_xy{tag}")],
                  [vector(f"a_yx{tag}").T, scalar(a_yy)]])
    return P, Q


def probe(name: str) -> BlockMat:
    """A probe vector [p_x; p_y] in R^{d+1}: p_x a vector letter, p_y a scalar symbol."""
    return BlockMat([[vector(f"{name}_x")], [scalar(sympy.Symbol(f"{name}_y"))]])


# ----------------------------------------------------------------------------------------------
# Sizes and concrete instances
# ----------------------------------------------------------------------------------------------
SIZES = {
    "quick": {"d": 3, "C": 6, "w_entry": 2},
    "default": {"d": 5, "C": 10, "w_entry": 2},
    "paper": {"d": 10, "C": 10, "w_entry": 2},
}


@dataclass(frozen=True)
class Instance:
    """Concrete sizes and the prior mean w* = w_entry * (1, ..., 1) (Table 1)."""

    d: int
    C: int
    w_entry: int

    @property
    def w_star_exact(self) -> sympy.Matrix:
        return sympy.Matrix([self.w_entry] * self.d)

    @property
    def w_star(self) -> np.ndarray:
        return np.full(self.d, float(self.w_entry))

    def w_star_torch(self, dtype=torch.float64, device="cpu") -> torch.Tensor:
        return torch.full((self.d,), float(self.w_entry), dtype=dtype, device=device)

    @property
    def s(self) -> int:
        """||w*||^2."""
        return self.d * self.w_entry ** 2

    def as_dict(self) -> dict:
        return {"d": self.d, "C": self.C, "w_star": [self.w_entry] * self.d,
                "w_star_norm2": self.s}


@dataclass(frozen=True)
class XieSetting:
    """Sizes per budget (``--size d=.. C=.. w_entry=..``); x ~ N(0, I) only (no ``--sigma``)."""

    sizes: Mapping[str, Mapping[str, int]]

    def resolve(self, budget: str, overrides: Mapping[str, int]) -> dict[str, int]:
        out = dict(self.sizes[budget])
        for k, v in overrides.items():
            if k not in out:
                raise UsageError(f"--size {k}: this setting has sizes {', '.join(sorted(out))}")
            out[k] = v
        for k, v in out.items():
            if not isinstance(v, int) or v <= 0:
                raise UsageError(f"size {k}={v} is impossible: sizes must be positive integers")
        if out["d"] > 12:
            raise UsageError(f"--size d={out['d']}: xie2025's exact checks support d <= 12")
        return out

    def validate(self, sizes: Mapping[str, int], sigma) -> None:
        if sigma is not None and getattr(sigma, "kind", None) != "identity":
            raise UsageError("xie2025 assumes x ~ N(0, I_d) (Sec. 2): --sigma must be identity")
        self.resolve("quick", sizes)

    def instance(self, budget: str, sizes: Mapping[str, int]) -> Instance:
        s = self.resolve(budget, sizes)
        return Instance(s["d"], s["C"], s["w_entry"])

    def describe(self) -> dict:
        return {"x": "N(0, I_d)", "w": "N(w*, I_d), w* = w_entry (1, ..., 1)", "y": "<w, x>",
                "sizes": dict(self.sizes)}


SETTING = XieSetting(SIZES)


def symbolic_dims(budget: str) -> tuple[int, ...]:
    """The dimensions d at which the symbolic tier solves exactly in C (and ||w*||^2)."""
    return {"quick": (2, 3), "default": (2, 3, 4)}.get(budget, (2, 3, 4))


PAPER_D, PAPER_C = 10, 10  # Sec. 5: d = 10, C = 10 context examples (Table 1)


def figure_dims(budget: str) -> tuple[int, ...]:
    """The figures' symbolic dimensions: those of ``symbolic_dims`` and the paper's d = 10
    (exact in C there in a few seconds), so a figure is checked at the model it shows."""
    return symbolic_dims(budget) + (PAPER_D,)


def paper_size_stand_in(inst) -> str:
    """How an instance is smaller than the figures' experiments (Sec. 5), or "" at their size."""
    why = smaller_than_paper({"d": inst.d, "C": inst.C}, {"d": PAPER_D, "C": PAPER_C},
                             "Sec. 5, Table 1")
    return why and f"{why}; --budget paper checks d = {PAPER_D}, C = {PAPER_C}"
