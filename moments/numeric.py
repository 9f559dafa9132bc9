"""Numeric evaluation of exact moments: exact rationals, mpmath, or float64.

Three arithmetics, one interface: ``mode='exact'`` (``fractions.Fraction`` entries, results as
sympy ``Rational`` / ``Matrix``), ``mode='mpmath'`` (``mpmath.mpf`` at ``dps`` digits, results as
``mpf`` / ``mpmath.matrix``) and ``mode='float'`` (numpy float64).  Used for Wishart polynomials
(``wishart.WishartPolynomial``), for sympy expressions in n, p_j, Sigma, d, and for the trace-word
polynomials of the Wick engine (``poly.Poly``).
"""
from __future__ import annotations

from fractions import Fraction
from typing import Any, Mapping

import mpmath
import numpy as np
import sympy

MODES = ("exact", "mpmath", "float")


def _check_mode(mode: str) -> None:
    if mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")


def _scalar(value, mode: str, dps: int = 50):
    """A number in the arithmetic of ``mode``."""
    if mode == "float":
        return float(value)
    if mode == "exact":
        if isinstance(value, Fraction):
            return value
        r = sympy.Rational(sympy.nsimplify(value) if isinstance(value, float) else value)
        return Fraction(int(r.p), int(r.q))
    with mpmath.workdps(dps):
        if isinstance(value, Fraction):
            return mpmath.mpf(value.numerator) / value.denominator
        if isinstance(value, sympy.Basic):
            return mpmath.mpf(sympy.N(value, dps + 5)._to_mpmath(mpmath.mp.prec))
        return mpmath.mpf(value)


def as_array(matrix, mode: str, dps: int = 50) -> np.ndarray:
    """A 2-d array (vectors become columns) with entries in the arithmetic of ``mode``."""
    _check_mode(mode)
    if isinstance(matrix, sympy.MatrixBase):
        rows = matrix.tolist()
    elif isinstance(matrix, mpmath.matrix):
        rows = matrix.tolist()
    else:
        rows = np.asarray(matrix, dtype=object).tolist()
    if rows and not isinstance(rows[0], list):
        rows = [[v] for v in rows]
    if mode == "float":
        return np.array([[float(v) for v in row] for row in rows], dtype=float)
    with mpmath.workdps(dps):
        return np.array([[_scalar(v, mode, dps) for v in row] for row in rows], dtype=object)


def _finish(value, mode: str, dps: int):
    """Convert an internal result (scalar or object array) to the mode's public type."""
    if mode == "float":
        return float(value) if np.ndim(value) == 0 else np.asarray(value, dtype=float)
    if np.ndim(value) == 0:
        if mode == "exact":
            v = Fraction(value)
            return sympy.Rational(v.numerator, v.denominator)
        return value
    if mode == "exact":
        return sympy.Matrix([[sympy.Rational(Fraction(v).numerator, Fraction(v).denominator)
                              for v in row] for row in np.asarray(value).tolist()])
    return mpmath.matrix(np.asarray(value).tolist())


def power_sums(sigma, k: int, mode: str = "exact", dps: int = 50) -> list:
    """[p_0, p_1, ..., p_k] with p_j = tr Sigma^j (p_0 = d)."""
    S = as_array(sigma, mode, dps)
    d = S.shape[0]
    with mpmath.workdps(dps):
        out = [_scalar(d, mode, dps)]
        P = S
        for _ in range(k):
            out.append(np.trace(P))
            P = P @ S
    return out


def evaluate_wishart(poly, sigma=None, n=None, d: int | None = None, mode: str = "exact",
                     dps: int = 50):
    """The value of a ``WishartPolynomial`` at a covariance ``sigma`` (or at Sigma = I_d) and an
    integer or rational ``n``: a scalar, or a matrix for matrix-valued moments."""
    _check_mode(mode)
    if n is None:
        raise ValueError("give n")
    if poly.identity:
        if d is None:
            if sigma is None:
                raise ValueError("give d for a moment at Sigma = I")
            d = as_array(sigma, "float").shape[0]
        sigma = np.eye(d, dtype=int)
    if sigma is None:
        raise ValueError("give sigma (or d for Sigma = I)")
    S = as_array(sigma, mode, dps)
    dim = S.shape[0]
    with mpmath.workdps(dps):
        nn = _scalar(n, mode, dps)
        p = power_sums(S, poly.degree, mode, dps) if not poly.identity else None
        dd = _scalar(dim, mode, dps)
        powers = [np.eye(dim, dtype=S.dtype) if mode == "float" else _eye(dim, mode, dps)]
        if poly.matrix:
            for _ in range(poly.degree):
                powers.append(powers[-1] @ S)
        total = None
        for key, c in poly.terms.items():
            if poly.identity:
                j, e = key
                value = _scalar(c, mode, dps) * nn ** e * dd ** j
                mat = powers[0]
            else:
                s, mu, e = key
                value = _scalar(c, mode, dps) * nn ** e
                for part in mu:
                    value = value * p[part]
                mat = powers[s] if poly.matrix else None
            term = value * mat if poly.matrix else value
            total = term if total is None else total + term
        if total is None:
            total = _scalar(0, mode, dps)
        return _finish(total, mode, dps)


def _eye(d: int, mode: str, dps: int) -> np.ndarray:
    one, zero = _scalar(1, mode, dps), _scalar(0, mode, dps)
    return np.array([[one if i == j else zero for j in range(d)] for i in range(d)], dtype=object)


def evaluate_expression(expr: sympy.Expr, sigma=None, n=None, d: int | None = None,
                        mode: str = "exact", dps: int = 50, **scalars):
    """Evaluate a sympy expression in n, d, p1, p2, ... (p_j = tr Sigma^j) and other scalar
    symbols (given by name in ``scalars``).  Sigma itself must not occur (use
    ``evaluate_wishart`` for matrix-valued moments)."""
    _check_mode(mode)
    names = {s.name: s for s in expr.free_symbols}
    if "Sigma" in names:
        raise ValueError("the expression is matrix-valued in Sigma: evaluate the WishartPolynomial")
    values: dict = {}
    if sigma is not None:
        S = as_array(sigma, "exact" if mode == "exact" else "mpmath", dps)
        d = S.shape[0] if d is None else d
        needed = [int(name[1:]) for name in names if name[:1] == "p" and name[1:].isdigit()]
        if needed:
            ps = power_sums(S, max(needed), "exact" if mode == "exact" else "mpmath", dps)
            for j in needed:
                values[names[f"p{j}"]] = _to_sympy_number(ps[j])
    elif any(name[:1] == "p" and name[1:].isdigit() for name in names):
        if d is None:
            raise ValueError("give sigma (or d for Sigma = I)")
        for name in names:
            if name[:1] == "p" and name[1:].isdigit():
                values[names[name]] = sympy.Integer(d)
    if "d" in names:
        if d is None:
            raise ValueError("give d")
        values[names["d"]] = sympy.Integer(d)
    if "n" in names:
        if n is None:
            raise ValueError("give n")
        values[names["n"]] = sympy.nsimplify(n)
    for name, v in scalars.items():
        if name in names:
            values[names[name]] = sympy.nsimplify(v)
    missing = set(names.values()) - set(values)
    if missing:
        raise ValueError(f"no value for {', '.join(sorted(s.name for s in missing))}")
    exact = sympy.nsimplify(expr.xreplace(values)) if mode == "exact" else expr.xreplace(values)
    if mode == "exact":
        return sympy.Rational(exact)
    if mode == "mpmath":
        return mpmath.mpf(sympy.N(exact, dps)._to_mpmath(mpmath.mp.prec))
    return float(exact)


def _to_sympy_number(v):
    if isinstance(v, Fraction):
        return sympy.Rational(v.numerator, v.denominator)
    if isinstance(v, mpmath.mpf):
        return sympy.Float(v, mpmath.mp.dps)
    return sympy.sympify(v)


def evaluate_poly(poly, env: Mapping[str, Any], scalars: Mapping | None = None,
                  mode: str = "float", dps: int = 50):
    """A Wick-engine ``Poly`` at concrete letters ``env`` in one of the three arithmetics."""
    _check_mode(mode)
    if mode == "float":
        return poly.evaluate({k: np.asarray(as_array(v, "float")) for k, v in env.items()},
                             scalars)
    if mode == "exact":
        mats = {k: sympy.Matrix(as_array(v, "exact").tolist()).applyfunc(
            lambda x: sympy.Rational(x.numerator, x.denominator)) for k, v in env.items()}
        return poly.evaluate(mats, scalars, exact=True)
    from .poly import _open_value, _word_value
    from .words import is_free

    scalars = {(k.name if isinstance(k, sympy.Symbol) else k): v
               for k, v in (scalars or {}).items()}
    with mpmath.workdps(dps):
        arrays = {k: as_array(v, "mpmath", dps) for k, v in env.items()}
        cache: dict = {}
        total = None
        for (cycles, chains), coeff in poly.terms.items():
            subs = {s: sympy.nsimplify(scalars[s.name]) for s in coeff.free_symbols
                    if s.name in scalars}
            c = coeff.xreplace(subs)
            if c.free_symbols:
                raise KeyError(f"no value for {', '.join(sorted(s.name for s in c.free_symbols))}")
            value = _scalar(c, "mpmath", dps)
            for w in cycles:
                value = value * _word_value(w, arrays, cache, True, poly.letters, scalars)
            opened = [w for w in chains if is_free(w)]
            for w in chains:
                if not is_free(w):
                    value = value * _word_value(w, arrays, cache, False, poly.letters, scalars)
            if opened:
                value = value * _open_value(opened, arrays, cache, poly.letters, scalars)
            total = value if total is None else total + value
        if total is None:
            return mpmath.mpf(0)
        return _finish(total, "mpmath", dps)


def float_evaluator(poly):
    """A fast float64 function ``f(sigma, n)`` for a scalar ``WishartPolynomial``.

    ``sigma`` may be one covariance (d, d) or a batch (B, d, d); ``n`` a number or an array
    broadcasting against the batch.  The monomials are evaluated at once with numpy, so a moment
    with tens of thousands of terms costs milliseconds per covariance.
    """
    if poly.matrix:
        raise ValueError("float_evaluator handles scalar moments (use trace=True or evaluate)")
    keys = list(poly.terms)
    coeffs = np.array([float(poly.terms[k]) for k in keys])
    if poly.identity:
        e_n = np.array([k[1] for k in keys])
        e_d = np.array([k[0] for k in keys])

        def f_identity(sigma=None, n=1, d=None):
            if d is None:
                d = np.asarray(sigma).shape[-1]
            n_arr = np.asarray(n, dtype=float)[..., None]
            return (coeffs * n_arr ** e_n * float(d) ** e_d).sum(-1)

        return f_identity
    K = max(poly.degree, 1)
    e_n = np.array([k[2] for k in keys])
    e_p = np.zeros((len(keys), K + 1))
    for i, (_, mu, _) in enumerate(keys):
        for part in mu:
            e_p[i, part] += 1

    def f(sigma, n):
        S = np.asarray(sigma, dtype=float)
        eig = np.linalg.eigvalsh(S)  # p_j = sum of eigenvalues^j
        p = np.stack([(eig ** j).sum(-1) for j in range(K + 1)], axis=-1)  # (..., K+1)
        mono = np.prod(p[..., None, :] ** e_p, axis=-1)  # (..., terms)
        n_arr = np.asarray(n, dtype=float)[..., None]
        return (coeffs * mono * n_arr ** e_n).sum(-1)

    return f
