"""Exact Wishart moments against pairing enumeration, the moment generating function, Monte Carlo
and closed forms derived here."""
import itertools

import numpy as np
import pytest
import sympy
from hypothesis import given, settings
from hypothesis import strategies as st

from moments import enumerate as enum
from moments import wishart, wishart_sympy
from moments.montecarlo import trace_power_statistic, wishart_estimates, z_critical
from moments.numeric import evaluate_expression
from moments.partitions import output_monomials, partitions_of
from moments.strategies import partitions, wishart_settings

n, d = wishart.N, wishart.D
S = wishart.SIGMA
p = [None] + [wishart.power_sum(j) for j in range(1, 30)]


def _states(max_degree):
    for t in range(1, max_degree + 1):
        for m in range(t + 1):
            for lam in partitions_of(t - m):
                yield m, lam


@pytest.mark.parametrize("m,lam", list(_states(5)))
def test_every_state_up_to_degree_5_matches_pairing_enumeration(m, lam):
    assert dict(wishart.moment(m, lam).terms) == enum.wishart_moment(m, lam)


@pytest.mark.parametrize("k", [1, 2, 3, 4, 5, 6])
def test_trace_moments_match_pairing_enumeration(k):
    assert dict(wishart.moment(k, (), trace=True).terms) == enum.trace_moment(k)


def test_low_orders_in_closed_form():
    # E[W] = n Sigma;  E[W^2] = n(n+1) Sigma^2 + n tr(Sigma) Sigma (Stein's lemma once more)
    assert sympy.expand(wishart_sympy.power_moment(1) - n * S) == 0
    assert sympy.expand(wishart_sympy.power_moment(2) - (n * (n + 1) * S**2 + n * p[1] * S)) == 0
    # E tr W^2 = n(n+1) p2 + n p1^2
    assert sympy.expand(wishart_sympy.trace_moment(2) - (n * (n + 1) * p[2] + n * p[1] ** 2)) == 0


def _mgf_moment(indices, dim=2):
    """E[prod W_{ab}] for d = 2, symbolic n and symbolic Sigma, from E etr(T W) =
    det(I - 2 Sigma T)^(-n/2) (T symmetric): an independent derivation."""
    s11, s12, s22 = sympy.symbols("s11 s12 s22")
    Sig = sympy.Matrix([[s11, s12], [s12, s22]])
    t = {(0, 0): sympy.Symbol("t00"), (0, 1): sympy.Symbol("t01"), (1, 1): sympy.Symbol("t11")}
    T = sympy.Matrix([[t[0, 0], t[0, 1]], [t[0, 1], t[1, 1]]])
    # tr(T W) = t00 W00 + 2 t01 W01 + t11 W11, so d/dt01 brings down 2 W01
    M = (sympy.eye(2) - 2 * Sig * T).det() ** (-n / 2)
    expr = M
    factor = 1
    for a, b in indices:
        key = (min(a, b), max(a, b))
        expr = sympy.diff(expr, t[key])
        if a != b:
            factor *= sympy.Rational(1, 2)
    value = expr.subs({v: 0 for v in t.values()}) * factor
    return sympy.expand(sympy.simplify(value)), Sig


def _trace_via_mgf(k):
    total = 0
    Sig = None
    for idx in itertools.product(range(2), repeat=k):
        word = [(idx[i], idx[(i + 1) % k]) for i in range(k)]
        value, Sig = _mgf_moment(word)
        total += value
    return sympy.expand(total), Sig


@pytest.mark.parametrize("k", [2, 3])
def test_trace_moments_against_the_moment_generating_function(k):
    via_mgf, Sig = _trace_via_mgf(k)
    powers = {p[j]: (Sig ** j).trace() for j in range(1, k + 1)}
    ours = wishart_sympy.trace_moment(k).subs(powers)
    assert sympy.expand(ours - via_mgf) == 0


def test_matrix_moment_entries_against_the_moment_generating_function():
    # E[(W^2)_{01}] = sum_c E[W_{0c} W_{c1}] from the MGF, against E[W^2] with Sigma a matrix
    total = sum(_mgf_moment([(0, c), (c, 1)])[0] for c in range(2))
    _, Sig = _mgf_moment([(0, 0)])
    ours = sympy.zeros(2, 2)
    for (s, mu, e), c in wishart.moment(2).terms.items():
        scalar = c * n**e * sympy.Mul(*[(Sig**part).trace() for part in mu])
        ours += scalar * Sig**s
    assert sympy.expand(total - ours[0, 1]) == 0


def test_third_trace_moment_at_identity_in_closed_form():
    # E tr W^3 = n d (n^2 + d^2 + 3nd + 3n + 3d + 4) (real Wishart, Sigma = I)
    want = n * d * (n**2 + d**2 + 3 * n * d + 3 * n + 3 * d + 4)
    assert sympy.expand(wishart_sympy.trace_moment(3, identity=True) - want) == 0


@pytest.mark.parametrize("k", range(1, 9))
def test_trace_moments_are_symmetric_in_n_and_d_at_identity(k):
    e = wishart_sympy.trace_moment(k, identity=True)
    assert sympy.expand(e - e.subs({n: d, d: n}, simultaneous=True)) == 0


@pytest.mark.parametrize("m,lam", [(3, ()), (0, (2, 1)), (4, (1,)), (2, (3, 1)), (6, ())])
def test_identity_engine_is_the_general_one_at_identity(m, lam):
    general = wishart.moment(m, lam).at_identity()
    assert dict(wishart.moment(m, lam, identity=True).terms) == dict(general.terms)


@pytest.mark.parametrize("root", [(7, (), True), (5, (2, 1), False), (0, (3, 2, 2), False),
                                  (9, (), False)])
def test_block_engine_agrees_with_the_per_state_engine(root):
    m, lam, trace = root
    blocks = wishart._compute(m, lam, trace, False, engine="blocks")
    states = wishart._compute(m, lam, trace, False, engine="states")
    assert dict(blocks.terms) == dict(states.terms)


def test_exact_high_part_from_float_agrees_with_primes(monkeypatch):
    # k = 20 needs more than 64 bits: 2^64 and float64 vs 2^64 and a prime must agree exactly
    default = wishart._compute(20, (), True, False)
    prime = wishart._primes()[0]
    monkeypatch.setattr(wishart, "_passes", lambda pl: [wishart.WRAP, prime])
    assert dict(wishart._compute(20, (), True, False).terms) == dict(default.terms)
    assert max(default.terms.values()).bit_length() > 64


@pytest.mark.parametrize("k", [4, 7, 10, 13])
def test_number_of_monomials_is_the_least_possible(k):
    poly = wishart.moment(k, (), trace=True)
    assert len(poly) == output_monomials(k)


def test_coefficients_sum_to_the_number_of_pairings():
    # at n = 1 and Sigma = 1 (d = 1), E tr W^k = E x^{2k} = (2k-1)!!
    for k in (5, 11, 17):
        assert sum(wishart.moment(k, (), trace=True).terms.values()) == enum.pairings(k)


def test_given_integer_n_and_expected_trace_of_polynomials():
    a = sympy.Symbol("a")
    w = sympy.Symbol("w")
    # E tr (I - a W/n)^2 = d - 2 a d + a^2 d (n + d + 1) / n, from E tr W = nd, E tr W^2 = nd(n+d+1)
    got = wishart_sympy.expected_trace((1 - a * w / n) ** 2, w, identity=True)
    assert sympy.simplify(got - (d - 2 * a * d + a**2 * d * (n + d + 1) / n)) == 0
    prod = wishart_sympy.expected_trace((1 + a * w / n) * (1 + 2 * a * w / n), w, identity=True)
    assert sympy.simplify(prod - (d + 3 * a * d + 2 * a**2 * d * (n + d + 1) / n)) == 0
    assert sympy.expand(wishart_sympy.trace_moment(3, n=4)
                        - wishart_sympy.trace_moment(3).subs(n, 4)) == 0
    fixed = wishart.moment(5, (), trace=True).at_n(3)
    assert all(key[-1] == 0 for key in fixed.terms)


def test_bad_orders_are_rejected():
    for bad in (0, -1, 2.5, "x", True, wishart.MAX_DEGREE + 1):
        with pytest.raises(ValueError):
            wishart_sympy.trace_moment(bad)


def test_printed_form_reads_back():
    for poly in (wishart.moment(5, (), trace=True), wishart.moment(4),
                 wishart.moment(4, identity=True)):
        back = sympy.sympify(poly.to_string())
        plain = poly.as_expr().subs({s: sympy.Symbol(s.name) for s in poly.as_expr().free_symbols})
        assert sympy.expand(back - plain) == 0


def test_numeric_modes_agree():
    Sig = sympy.Matrix([[2, 1], [1, 3]])
    poly = wishart.moment(4)
    exact = poly.evaluate(Sig, n=5, mode="exact")
    as_float = poly.evaluate(Sig, n=5, mode="float")
    as_mp = poly.evaluate(Sig, n=5, mode="mpmath")
    assert np.allclose(np.array(exact.tolist(), dtype=float), as_float, rtol=1e-12)
    assert abs(float(as_mp[0, 1]) - float(exact[0, 1])) < 1e-9
    tr = wishart.moment(4, (), trace=True).evaluate(Sig, n=5)
    assert tr == exact.trace()
    assert evaluate_expression(wishart_sympy.trace_moment(4), Sig, n=5) == tr


@settings(max_examples=6, deadline=None, derandomize=True)
@given(setting=wishart_settings(max_n=5, max_d=3), data=st.data())
def test_trace_moments_against_monte_carlo(setting, data):
    """E tr W^k, k = 1..4, for random SPD Sigma and n, judged by a Bonferroni interval."""
    Sig, nn = setting
    ks = [1, 2, 3, 4]
    exact = [float(wishart.moment(k, (), trace=True).evaluate(Sig, n=nn)) for k in ks]
    rng = np.random.default_rng(data.draw(st.integers(0, 2**16)))
    est = wishart_estimates(trace_power_statistic(ks), np.array(Sig.tolist(), dtype=float), nn,
                            20_000, rng)
    z = z_critical(0.999, 6 * len(ks))
    assert all(abs(e.z_score(x)) <= z for e, x in zip(est, exact))


@settings(max_examples=5, deadline=None, derandomize=True)
@given(setting=wishart_settings(max_n=4, max_d=3), lam=partitions(max_size=3, min_size=1),
       r=st.integers(0, 2))
def test_mixed_moments_against_monte_carlo(setting, lam, r):
    """Entries of E[W^r p_lam(W)] for random Sigma, n and lam."""
    Sig, nn = setting
    poly = wishart.moment(r, lam)
    exact = poly.evaluate(Sig, n=nn, mode="float")
    exact = np.atleast_2d(exact) if r else np.array([[exact]])
    Sn = np.array(Sig.tolist(), dtype=float)

    def stat(W):
        val = np.ones(W.shape[0])
        for part in lam:
            val = val * np.trace(np.linalg.matrix_power(W, part), axis1=1, axis2=2)
        M = np.linalg.matrix_power(W, r) if r else np.ones((W.shape[0], 1, 1))
        return (M * val[:, None, None]).reshape(W.shape[0], -1)

    est = wishart_estimates(stat, Sn, nn, 20_000, np.random.default_rng(7))
    z = z_critical(0.999, 5 * exact.size)
    assert all(abs(e.z_score(x)) <= z for e, x in zip(est, exact.ravel()))


def _same_poly(p, q):
    return set(p.terms) == set(q.terms) and all(
        sympy.expand(p.terms[k] - q.terms[k]) == 0 for k in p.terms)


@pytest.mark.parametrize("m,lam", [(1, ()), (3, ()), (4, ()), (2, (1,)), (1, (2, 1)), (0, (2, 2))])
def test_wishart_kernel_equals_the_isserlis_engine(m, lam):
    from moments.tensor import gaussian_matrix, matrix
    from moments.wick import expectation

    Sg = matrix("Sigma", symmetric=True)
    X = gaussian_matrix("X", "d", "n", row_cov=Sg)
    W = X @ X.T
    expr = None
    for _ in range(m):
        expr = W if expr is None else expr @ W
    for part in lam:
        P = W
        for _ in range(part - 1):
            P = P @ W
        expr = P.trace() if expr is None else expr * P.trace()
    assert _same_poly(expectation(expr), wishart.moment(m, lam).to_poly())
    if m:
        assert _same_poly(expectation(expr.trace()), wishart.moment(m, lam, trace=True).to_poly())
