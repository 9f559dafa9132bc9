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
