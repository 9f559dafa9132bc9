"""Letters: the named matrices and vectors that symbolic moment expressions are built from.

A letter is a fixed matrix (``Sigma``, ``A``), a fixed column vector (``mu``), or a random one with
a Gaussian law.  Every letter lives between two index *spaces*: ``'d'`` (features), ``'n'``
(samples) or any other name (``'m'``, ``'K'``), and ``'1'`` for the trivial one-dimensional space,
so that a column vector is a ``space x '1'`` letter.  The size of a space named ``s`` is the sympy
symbol ``s`` (see :func:`space_size`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import sympy

ONE = "1"
FREE_LEFT = "<L>"
FREE_RIGHT = "<R>"


def space_size(space: str) -> sympy.Symbol:
    """The symbolic size of an index space (``n``, ``d``, ...), a positive integer symbol."""
    if space == ONE:
        raise ValueError("the trivial space '1' has no size symbol")
    return sympy.Symbol(space, positive=True, integer=True)


@dataclass(frozen=True)
class GaussianVectorLaw:
    """x ~ N(mean, cov); ``None`` means a zero mean or an identity covariance."""

    mean: "Letter | None" = None
    cov: "Letter | None" = None


@dataclass(frozen=True)
class GaussianMatrixLaw:
    """Columns i.i.d. N(0, row_cov) (``None``: identity): E[X_ai X_bj] = row_cov_ab delta_ij.

    With ``X`` of shape d x n this is the data matrix of n samples, and W = X X^T is
    Wishart(n, row_cov) in the convention W = sum_i x_i x_i^T (not divided by n).
    """

    row_cov: "Letter | None" = None


Law = Union[GaussianVectorLaw, GaussianMatrixLaw]


@dataclass(frozen=True)
class Letter:
    """A named matrix ``rows x cols`` (a column vector when ``cols == '1'``)."""

    name: str
    rows: str
    cols: str = ONE
    symmetric: bool = False
    law: Law | None = None
    latex: str | None = None

    def __post_init__(self) -> None:
        if self.rows == ONE:
            raise ValueError(f"letter {self.name}: write row vectors as transposed column vectors")
        if self.symmetric and self.rows != self.cols:
            raise ValueError(f"letter {self.name}: a symmetric letter must be square")
        if self.name in (FREE_LEFT, FREE_RIGHT):
            raise ValueError(f"letter name {self.name} is reserved")

    @property
    def is_vector(self) -> bool:
        return self.cols == ONE

    @property
    def is_random(self) -> bool:
        return self.law is not None

    def tex(self) -> str:
        """LaTeX for the letter: ``Sigma`` -> ``\\Sigma``, ``A_x`` -> ``A_{x}``."""
        if self.latex:
            return self.latex
        return latex_name(self.name)


_GREEK = {
    "alpha", "beta", "gamma", "delta", "epsilon", "zeta", "eta", "theta", "iota", "kappa",
    "lambda", "mu", "nu", "xi", "pi", "rho", "sigma", "tau", "upsilon", "phi", "chi", "psi",
    "omega", "Gamma", "Delta", "Theta", "Lambda", "Xi", "Pi", "Sigma", "Upsilon", "Phi",
    "Psi", "Omega",
}


def latex_name(name: str) -> str:
    """A readable LaTeX rendering of an identifier such as ``Sigma_inv`` or ``p_yx``."""
    head, _, tail = name.partition("_")
    head_tex = "\\" + head if head in _GREEK else head
    if not tail:
        return head_tex
    return head_tex + "_{" + tail.replace("_", ",") + "}"
