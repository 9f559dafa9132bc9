"""Hypothesis strategies for moment tests: SPD covariances, sizes and mean vectors.

Examples are kept small (d <= 4, small integer entries) so property tests stay fast; users can
import these in their own test suites.
"""
from __future__ import annotations

import numpy as np
import sympy
from hypothesis import strategies as st


@st.composite
def spd_matrices(draw, d: int | None = None, max_d: int = 4, exact: bool = False,
                 max_entry: int = 3):
    """A symmetric positive definite matrix B B^T + I with small integer B.

    ``exact=True`` returns a sympy ``Matrix`` of integers, else a float64 ``ndarray``.
    """
    if d is None:
        d = draw(st.integers(min_value=1, max_value=max_d))
    entries = draw(st.lists(st.integers(-max_entry, max_entry), min_size=d * d, max_size=d * d))
    B = sympy.Matrix(d, d, entries)
    S = B * B.T + sympy.eye(d)
    return S if exact else np.array(S.tolist(), dtype=float)


@st.composite
def sizes(draw, max_n: int = 8, max_d: int = 4):
    """(n, d) with 1 <= n <= max_n and 1 <= d <= max_d."""
    return (draw(st.integers(1, max_n)), draw(st.integers(1, max_d)))


@st.composite
def mean_vectors(draw, d: int, max_entry: int = 2, exact: bool = False):
    """A mean vector with small integer entries, as a column."""
    entries = draw(st.lists(st.integers(-max_entry, max_entry), min_size=d, max_size=d))
    v = sympy.Matrix(d, 1, entries)
    return v if exact else np.array(v.tolist(), dtype=float)


@st.composite
def matrices(draw, d: int, max_entry: int = 2, exact: bool = False):
    """A general (non-symmetric) d x d matrix with small integer entries."""
    entries = draw(st.lists(st.integers(-max_entry, max_entry), min_size=d * d, max_size=d * d))
    m = sympy.Matrix(d, d, entries)
    return m if exact else np.array(m.tolist(), dtype=float)


@st.composite
def rational_spd_matrices(draw, d: int | None = None, max_d: int = 3, max_den: int = 4):
    """An exact SPD matrix with rational entries: B B^T + I/q for a small rational B (sympy).

    Entries of B are a/q with |a| <= 2 and q <= max_den, so Monte Carlo cross-checks stay cheap.
    """
    if d is None:
        d = draw(st.integers(min_value=1, max_value=max_d))
    q = draw(st.integers(1, max_den))
    entries = draw(st.lists(st.integers(-2, 2), min_size=d * d, max_size=d * d))
    B = sympy.Matrix(d, d, [sympy.Rational(a, q) for a in entries])
    return B * B.T + sympy.eye(d) / q


@st.composite
def diagonal_spd_matrices(draw, d: int | None = None, max_d: int = 4, exact: bool = True):
    """A diagonal SPD matrix with eigenvalues in {1/4, 1/2, 1, 2, 3}."""
    if d is None:
        d = draw(st.integers(min_value=1, max_value=max_d))
    values = draw(st.lists(st.sampled_from([sympy.Rational(1, 4), sympy.Rational(1, 2), 1, 2, 3]),
                           min_size=d, max_size=d))
    S = sympy.diag(*values)
    return S if exact else np.array(S.tolist(), dtype=float)


@st.composite
def wishart_settings(draw, max_n: int = 6, max_d: int = 3, exact: bool = True):
    """(Sigma, n): an SPD covariance (integer or rational entries) and a sample count n >= 1."""
    kind = draw(st.sampled_from(["integer", "rational", "diagonal"]))
    d = draw(st.integers(1, max_d))
    if kind == "integer":
        S = draw(spd_matrices(d=d, exact=True, max_entry=1))
    elif kind == "rational":
        S = draw(rational_spd_matrices(d=d))
    else:
        S = draw(diagonal_spd_matrices(d=d))
    n = draw(st.integers(1, max_n))
    return (S if exact else np.array(S.tolist(), dtype=float)), n


def partitions(max_size: int = 6, min_size: int = 0):
    """A partition (non-increasing tuple of positive parts) of size in [min_size, max_size]."""
    return st.lists(st.integers(1, max_size), max_size=max_size).map(
        lambda parts: tuple(sorted(parts, reverse=True))).filter(
        lambda lam: min_size <= sum(lam) <= max_size)
