"""Which mutants of a bound or a hypothesis a claim implies, and which its exact values show
true: the domain sampling behind ``verify.equivalence`` (the ``implied`` and ``true`` kinds; see
its docstring), with the symbolic proofs in ``verify.implication_proofs``."""
from __future__ import annotations

import dataclasses
import itertools
from typing import Iterator, Mapping

import numpy as np
import sympy

from .domain import Domain, _is_matrix, _one_line, size_assignments
from .formulas import SIZE_NAMES, NamedFormula
from .implication_proofs import _definition_proof, _implied_proof, _narrower_proof


# ---------------------------------------------------------------------------------- implication
IMPLIED_INSTANCES = 60    # instances compared (at least 40 must be in the domain)
# in a claim's domain (hypotheses, definitions): a looser-looking bound may be tighter only in a
# corner (gatmiry2024 Thm 4.5's (1 + 16 d^(1/(2L)) delta - zeta)^(3L) for ^(2L): where the base
# is below 1, at L = 1 and n > 10^7 d^2), which 60 points missed
DOMAIN_INSTANCES = 400
IMPLIED_MIN = 40
IMPLIED_ATTEMPTS = 400    # draws tried before giving up on reaching IMPLIED_INSTANCES
NARROWER_ATTEMPTS = 3000  # draws that must all agree before a hypothesis counts as narrower
IMPLIED_DIGITS = 50       # working precision of the comparison
SCALAR_RANGE = (-3, 3)    # scalars log-uniform over [10^-3, 10^3]
SIZE_DIGITS = 30          # random sizes: half in [1, 10], half log-uniform in [1, 10^SIZE_DIGITS]


def _bound_words(weaker: str) -> tuple[str, str, str]:
    """(the comparison, what a looser value is, what a tighter one is) for ``weaker``."""
    if weaker == "larger":
        return ">=", "a looser upper bound (a larger value)", "tighter (smaller)"
    return "<=", "a looser lower bound (a smaller value)", "tighter (larger)"


def _scalar_symbols(formula: NamedFormula) -> list | None:
    """The formula's declared symbols if they are all scalars, else None."""
    if formula.shape is not None or any(s.kind != "scalar" for s in formula.symbols):
        return None
    return list(formula.symbols)


def _random_size(rng: np.random.Generator) -> int:
    """A size in [1, 10] or log-uniform in [1, 10^SIZE_DIGITS], with equal chance: a condition
    such as d >= 64 L d / sqrt(n) holds only from n = 4096 on, a bound may cross the original
    only at astronomically large n."""
    if rng.integers(2):
        return int(rng.integers(1, 11))
    return int(10 ** rng.uniform(0, SIZE_DIGITS))


def _draw_domain(symbols, rng: np.random.Generator, sizes: dict | None) -> dict:
    """Exact rational values for scalar symbols in the claim's domain: sizes positive integers
    (``sizes``, or random ones), unit scalars in (0, 1), the others log-uniform (half of them
    in their ``near`` range, if any)."""
    values = {}
    for s in symbols:
        if s.name in SIZE_NAMES:
            if sizes is not None and s.name in sizes:
                values[s.name] = sympy.Integer(sizes[s.name])
            else:
                values[s.name] = sympy.Integer(_random_size(rng))
        elif s.unit:
            if rng.uniform() < 0.5:
                v = 10.0 ** rng.uniform(-6, 0)
            else:
                v = rng.uniform(0, 1)
            r = sympy.Rational(v).limit_denominator(10 ** 9)
            values[s.name] = r if 0 < r < 1 else sympy.Rational(1, 2)
        else:
            lo, hi = SCALAR_RANGE
            if s.near is not None and rng.uniform() < 0.5:
                lo, hi = np.log10(s.near[0]), np.log10(s.near[1])
            v = 10.0 ** rng.uniform(lo, hi)
            values[s.name] = sympy.Rational(v).limit_denominator(10 ** 9)
    for s in symbols:  # lambda_j <= lambda_1: a fraction in (0, 1] of the bounding value,
        # and equal to it in a tenth of the draws (eigenvalues coincide: Sigma^out = c I makes
        # s_min >= s_max hold, which a draw of u in (0, 1) never does)
        if s.at_most is not None and s.at_most in values:
            u = sympy.Rational(rng.uniform(0, 1)).limit_denominator(10 ** 9)
            values[s.name] = values[s.at_most] * (u if 0 < u <= sympy.Rational(9, 10) else 1)
    return values


def _real(fn, args) -> "mpmath.mpf | None":
    """fn(*args) as a finite real mpf, or None (a pole, a complex value, an infinity)."""
    import mpmath

    try:
        v = fn(*args)
    except (ZeroDivisionError, ValueError, TypeError, OverflowError):
        return None
    if isinstance(v, (int, float)):
        v = mpmath.mpf(v)
    if not isinstance(v, mpmath.mpf) or not mpmath.isfinite(v):
        if isinstance(v, mpmath.mpc) and v.imag == 0 and mpmath.isfinite(v.real):
            return v.real
        return None
    return v


def _shown(values: dict) -> dict:
    return {k: str(v) for k, v in values.items()}


def implication(formula: NamedFormula, original: sympy.Basic, mutant: sympy.Basic,
                seed: int = 0, allow_equal: bool = False,
                domain: Domain | None = None) -> tuple[bool, str]:
    """(is the mutant implied by the original, why): for a scalar formula marked ``weaker``, is
    the mutant on the weaker side of the original at every point of the claim's domain?"""
    import mpmath

    weaker = formula.weaker
    if weaker is None:
        return False, "the formula is not marked as a bound"
    if weaker == "narrower":
        return _narrower(formula, original, mutant, seed, domain)
    if domain is not None:
        return _implication_in(formula, original, mutant, seed, allow_equal, domain)
    symbols = _scalar_symbols(formula)
    if symbols is None or _is_matrix(original) or _is_matrix(mutant) \
            or not isinstance(original, sympy.Expr) or not isinstance(mutant, sympy.Expr):
        return False, "the implication test applies to scalar formulas of scalars only"
    op, looser, tighter = _bound_words(weaker)
    names = [s.name for s in symbols]
    local = formula.locals()
    fns, error = _lambdified([local[n] for n in names], original, mutant)
    if error:
        return False, f"cannot evaluate the formulas numerically ({error})"
    f_o, f_m = fns
    rng = np.random.default_rng([seed, 0x696D70])
    patterns = size_assignments(formula)
    compared, strict, ratios = 0, 0, []
    with mpmath.workdps(IMPLIED_DIGITS):
        tol = mpmath.mpf(10) ** (-(IMPLIED_DIGITS - 10))
        for attempt in range(IMPLIED_ATTEMPTS):
            if compared >= IMPLIED_INSTANCES:
                break
            sizes = patterns[attempt % len(patterns)] if attempt < 8 * len(patterns) else None
            values = _draw_domain(symbols, rng, sizes)
            point = [mpmath.mpf(int(values[n].p)) / int(values[n].q) for n in names]
            a = _real(f_o, point)
            if a is None:
                continue  # the original has no real value here: outside the claim's domain
            compared += 1
            b = _real(f_m, point)
            if b is None:
                return False, (f"not implied: the mutant is not a finite real number at "
                               f"{_shown(values)} where the original is {mpmath.nstr(a, 12)}")
            side = _side(a, b, weaker, tol)
            if side < 0:
                return False, (f"not implied: the mutant is {tighter} than the original at "
                               f"{_shown(values)}: {mpmath.nstr(b, 12)} vs {mpmath.nstr(a, 12)}")
            strict += side > 0
            if a != 0:
                ratios.append(b / a)
    if compared < IMPLIED_MIN:
        return False, (f"not decided: the original has a finite real value at only {compared} of "
                       f"{IMPLIED_ATTEMPTS} instances drawn")
    if strict == 0 and not allow_equal:
        return False, f"not decided: equal to the original at all {compared} instances drawn"
    proof = _implied_proof(formula, original, mutant)
    domain = _domain_words(formula)
    if proof:
        return True, f"implied: {proof}, {looser}; {domain}"
    span = (f"; mutant/original from {mpmath.nstr(min(ratios), 6)} to {mpmath.nstr(max(ratios), 6)}"
            if ratios else "")
    return True, (f"implied: mutant {op} original at all {compared} instances of the domain "
                  f"(strictly at {strict}; {IMPLIED_DIGITS}-digit values at exact rational points, "
                  f"{domain}){span}: {looser}")


def _side(a, b, weaker: str, tol) -> int:
    """+1 when the mutant's value b is on the weaker side of the original's a, -1 on the tighter
    side, 0 when they agree to the relative tolerance tol."""
    import mpmath

    scale = max(abs(a), abs(b), mpmath.mpf(1e-300))
    gap = b - a if weaker == "larger" else a - b
    return 1 if gap > tol * scale else (-1 if gap < -tol * scale else 0)


def _lambdified(args: list, *exprs) -> tuple[list | None, str]:
    """mpmath functions of exprs in args, or (None, why they cannot be evaluated)."""
    try:
        return [sympy.lambdify(args, e, "mpmath") for e in exprs], ""
    except Exception as exc:  # noqa: BLE001 - a form lambdify cannot print
        return None, _one_line(exc)


DOMAIN_ATTEMPTS = 3000    # draws tried when the claim's hypotheses reject most of them


def _domain_functions(domain: Domain, *exprs) -> tuple[list | None, str]:
    """mpmath functions, in the domain's declared scalars, of exprs written in same-named
    symbols (whatever their assumptions)."""
    local = {s.name: s.sympy() for s in domain.symbols}
    args = [local[s.name] for s in domain.symbols]
    exprs = [e.xreplace({x: local[x.name] for x in e.free_symbols if x.name in local})
             for e in exprs]
    return _lambdified(args, *exprs)


# the sizes of the grid that follows the random draws where asked (``_domain_draws``): 1..10,
# eight steps a decade to 10^7, then each decade to 10^SIZE_DIGITS
SIZE_LADDER = tuple(sorted({*range(1, 11), *(round(10 ** (1 + j / 8)) for j in range(1, 49)),
                            *(10 ** j for j in range(8, SIZE_DIGITS + 1))}))
GRID_POINTS = 20000  # size assignments of the grid, smallest ladder steps first


def _size_grid(names: list[str]) -> Iterator[dict]:
    """At most GRID_POINTS assignments of SIZE_LADDER values to the sizes ``names``, by
    increasing sum of ladder steps (all sizes small first, then one or more of them larger)."""
    top, count = len(SIZE_LADDER) - 1, 0

    def steps(total: int, k: int) -> Iterator[tuple]:
        if k == 1:
            if total <= top:
                yield (total,)
            return
        for first in range(min(total, top) + 1):
            for rest in steps(total - first, k - 1):
                yield (first, *rest)

    for total in range(top * len(names) + 1):
        for idx in steps(total, len(names)):
            yield {n: SIZE_LADDER[i] for n, i in zip(names, idx)}
            count += 1
            if count >= GRID_POINTS:
                return


def _domain_draws(domain: Domain, rng: np.random.Generator, grid: bool = False) -> Iterator[list]:
    """DOMAIN_ATTEMPTS random points (mpf values in the order of ``domain.symbols``) before the
    definitions are applied: each size as ``_random_size`` draws it, sizes outside the claim's
    stated ranges skipped, other scalars log-uniform, unit ones in (0, 1); with ``grid``, then
    the sizes of ``_size_grid`` (a hypothesis such as d >= 1024 n^4 L^2 holds at one random
    draw in a thousand, which is too few to compare exact values at)."""
    import mpmath

    names = [s.name for s in domain.symbols if s.name in SIZE_NAMES]
    random = ({n: _random_size(rng) for n in names} for _ in range(DOMAIN_ATTEMPTS))
    for sizes in itertools.chain(random, _size_grid(names) if grid and names else ()):
        if not _in_ranges(domain, sizes):
            continue
        values = _draw_domain(domain.symbols, rng, sizes)
        yield [mpmath.mpf(int(values[s.name].p)) / int(values[s.name].q) for s in domain.symbols]


def _in_ranges(domain: Domain, values: Mapping) -> bool:
    """Whether values (by name) meet the claim's stated ranges."""
    return all(bool(r.subs({x: values[x.name] for x in r.free_symbols})) for r in domain.ranges)


def _defined(point: list, definitions: list) -> list | None:
    """The point with each defined symbol set to its definition (None where one is undefined)."""
    point = list(point)
    try:
        for i, g in definitions:
            point[i] = g(*point)
    except (ZeroDivisionError, ValueError, TypeError, OverflowError):
        return None
    return point


def _all_hold(conditions: list, point: list | None) -> bool | None:
    """Whether every condition holds at the point (None where one cannot be evaluated)."""
    if point is None:
        return None
    try:
        return all(bool(h(*point)) for h in conditions)
    except (ZeroDivisionError, ValueError, TypeError, OverflowError):
        return None


def _implication_in(formula: NamedFormula, original, mutant, seed: int, allow_equal: bool,
                    domain: Domain) -> tuple[bool, str]:
    """``implication`` on the claim's domain (``_domain_draws``): definitions applied, points
    where a hypothesis fails skipped."""
    import mpmath

    if formula.shape is not None or not all(isinstance(e, sympy.Expr) for e in (original, mutant)):
        return False, "the implication test applies to scalar formulas of scalars only"
    names = [s.name for s in domain.symbols]
    fns, error = _domain_functions(domain, original, mutant,
                                   *(e for _, e in domain.definitions), *domain.hypotheses)
    if error:
        return False, f"cannot evaluate the formulas numerically ({error})"
    f_o, f_m = fns[:2]
    defs = [(names.index(n), g) for (n, _), g in zip(domain.definitions, fns[2:])]
    hyps = fns[2 + len(domain.definitions):]
    rng = np.random.default_rng([seed, 0x646F6D])
    compared, strict, kept, drawn = 0, 0, [], 0  # kept: the first points compared
    words = f"{_domain_words(formula)}, {domain.words}"
    free = _movable(domain.symbols, domain)
    with mpmath.workdps(IMPLIED_DIGITS):
        tol = mpmath.mpf(10) ** (-(IMPLIED_DIGITS - 10))
        # DOMAIN_INSTANCES points drawn, then each free scalar of the first IMPLIED_MIN of them
        # moved to the ends of its range (Thm 3.3's radius with n for xi is looser wherever
        # xi <= 10^3 is drawn, tighter at xi = 10^30 > n)
        for moved in (False, True):
            raws = (q for raw in kept for q in _moved(raw, free)
                    if _in_ranges(domain, dict(zip(names, q)))) if moved \
                else _domain_draws(domain, rng)
            for raw in raws:
                if not moved and compared >= DOMAIN_INSTANCES:
                    break
                point = _defined(raw, defs)
                if not _all_hold(hyps, point):
                    continue
                a = _real(f_o, point)
                if a is None:
                    continue
                if not moved and len(kept) < IMPLIED_MIN:
                    kept.append(raw)
                compared += 1
                b = _real(f_m, point)
                shown = {n: mpmath.nstr(v, 8) for n, v in zip(names, point)}
                if b is None:
                    return False, (f"not implied: the mutant is not a finite real number at "
                                   f"{shown} where the original is {mpmath.nstr(a, 12)}")
                side = _side(a, b, formula.weaker, tol)
                if side < 0:
                    tighter = _bound_words(formula.weaker)[2]
                    return False, (f"not implied: the mutant is {tighter} than the original at "
                                   f"{shown} ({words}): {mpmath.nstr(b, 12)} vs "
                                   f"{mpmath.nstr(a, 12)}")
                strict += side > 0
            if not moved:
                drawn = compared
    if drawn < IMPLIED_MIN:
        return False, (f"not decided: only {drawn} of {DOMAIN_ATTEMPTS} points drawn are in "
                       f"the claim's domain ({words})")
    if strict == 0 and not allow_equal:
        return False, f"not decided: equal to the original at all {compared} points drawn"
    op, looser = _bound_words(formula.weaker)[:2]
    return True, (f"implied: mutant {op} original at all {compared} points of the claim's domain "
                  f"drawn or moved (strictly at {strict}; {IMPLIED_DIGITS}-digit values; {words}, "
                  f"{compared - drawn} of them with a scalar at an end of its range): {looser}")


def definition_implication(name: str, mutant: sympy.Expr, seed: int,
                           domain: Domain) -> tuple[str, str]:
    """(kind, why) for the claim with the mutant definition of ``name`` (delta := ...): kind
    ``implied`` when, at every point of the claim's domain drawn, its hypotheses hold only where
    they hold with the original definition and there every bound of the claim is on its weaker
    side (a larger delta in "loss <= d (2 delta)^{2L}" under "delta d^{1/(2L)} < 1/2"), or when
    they hold at no point drawn (a vacuous claim); ``identity`` when every side of every
    hypothesis and every bound takes the same value with either definition (-delta where only
    delta^{2L} occurs); ``none`` otherwise."""
    import mpmath

    names = [s.name for s in domain.symbols]
    originals = [e for _, e in domain.definitions]
    mutated = [mutant if n == name else e for n, e in domain.definitions]
    relations = sorted({r for h in domain.hypotheses
                        for r in h.atoms(sympy.core.relational.Relational)}, key=str)
    fns, error = _domain_functions(domain, *originals, *mutated, *domain.hypotheses,
                                   *(e for _, e, _ in domain.bounds),
                                   *(r.lhs - r.rhs for r in relations))
    if error:
        return "none", f"cannot evaluate the claim numerically ({error})"
    k, h, nb = len(originals), len(domain.hypotheses), len(domain.bounds)
    index = [names.index(n) for n, _ in domain.definitions]
    defs_o, defs_m = list(zip(index, fns[:k])), list(zip(index, fns[k:2 * k]))
    hyps = fns[2 * k:2 * k + h]
    bounds = list(zip(domain.bounds, fns[2 * k + h:2 * k + h + nb]))
    gaps = fns[2 * k + h + nb:]
    rng = np.random.default_rng([seed, 0x646566])
    held, compared, strict, same = 0, 0, 0, True
    with mpmath.workdps(IMPLIED_DIGITS):
        tol = mpmath.mpf(10) ** (-(IMPLIED_DIGITS - 10))
        for raw in _domain_draws(domain, rng):
            if compared >= DOMAIN_INSTANCES and strict:
                break
            p_o, p_m = _defined(raw, defs_o), _defined(raw, defs_m)
            h_o, h_m = _all_hold(hyps, p_o), _all_hold(hyps, p_m)
            if h_o is None or h_m is None:
                continue
            shown = {n: mpmath.nstr(v, 8) for n, v in zip(names, raw) if n != name}
            if h_m and not h_o:
                return "none", (f"not implied: with {name} := {mutant} the claim's hypotheses "
                                f"hold at {shown}, where with the original definition they do "
                                f"not (a wider claim)")
            held += h_m
            if not h_o:
                continue
            compared += 1
            strict += not h_m  # narrower there
            sides = ((_real(g, p_o), _real(g, p_m)) for g in gaps)
            same = same and h_m and all(_side(a, b, "larger", tol) == 0
                                        for a, b in sides if a is not None and b is not None)
            if not h_m:
                continue
            for (bname, _, weaker), g in bounds:
                a, b = _real(g, p_o), _real(g, p_m)
                if a is None:
                    continue
                if b is None:
                    return "none", (f"not implied: with {name} := {mutant} the bound {bname} is "
                                    f"not a finite real number at {shown}")
                side = _side(a, b, weaker, tol)
                if side < 0:
                    return "none", (f"not implied: with {name} := {mutant} the bound {bname} is "
                                    f"{_bound_words(weaker)[2]} at {shown}: "
                                    f"{mpmath.nstr(b, 12)} vs {mpmath.nstr(a, 12)}")
                strict += side > 0
    where = f"{DOMAIN_ATTEMPTS} points drawn, {domain.words}"
    named = ", ".join(b for b, _, _ in domain.bounds) or "none"
    if compared < IMPLIED_MIN or (strict == 0 and not same):
        proof = _definition_proof(name, mutant, domain)
        if proof:
            return "implied", (f"implied: {proof}; a weaker claim (the sampling left it "
                               f"undecided: the truth values differ at {strict} of {compared} "
                               f"admitted points of {where})")
    if compared < IMPLIED_MIN:
        return "none", f"not decided: the claim's hypotheses hold at only {compared} of {where}"
    if held == 0:
        return "implied", (f"implied: with {name} := {mutant} the claim's hypotheses hold at none "
                           f"of the {compared} points drawn where they hold with the original "
                           f"definition ({where}): a vacuous claim there")
    if strict == 0 and same:
        return "identity", (f"the claim is the same statement with {name} := {mutant}: every side "
                            f"of its hypotheses and its bounds ({named}) take the same "
                            f"{IMPLIED_DIGITS}-digit values at all {compared} points of its "
                            f"domain drawn ({where})")
    if strict == 0:
        return "none", (f"not decided: the claim's truth values are unchanged at all {compared} "
                        f"points drawn")
    return "implied", (f"implied: with {name} := {mutant}, at all {compared} points of the claim's "
                       f"domain drawn ({IMPLIED_DIGITS}-digit values; {where}), the hypotheses "
                       f"hold only where they held and every bound ({named}) is at least as "
                       f"loose (strictly at {strict}): a weaker claim")


EXACT_INSTANCES = 60   # points of the claim's domain at which its exact values are compared
EXACT_TOLERANCE = 40   # digits: a bound within 10^-40 (relative) of the exact value holds
EXACT_OUTSIDE = 20     # of them where the original hypotheses fail, for a wider hypothesis


def exact_truth(name: str, mutant: sympy.Basic, seed: int, domain: Domain) -> tuple[str, str]:
    """(kind, why) for the claim with formula ``name`` replaced by the mutant (a bound, a
    hypothesis or a definition), judged by the claim's exact values (``domain.exact``) at points
    of its domain drawn as ``_domain_draws`` draws them, definitions applied, where the mutated
    hypotheses hold: ``true`` when every bound holds for the exact value at EXACT_INSTANCES such
    points (at least IMPLIED_MIN), ``false`` at the first point where one does not, ``undecided``
    otherwise."""
    import mpmath

    names = [s.name for s in domain.symbols]
    defs = [(n, mutant if n == name else e) for n, e in domain.definitions]
    hyps = [mutant if n == name else e for n, e in zip(domain.hypothesis_names, domain.hypotheses)]
    bounds = [(n, mutant if n == name else e, w) for n, e, w in domain.bounds]
    redefined = False  # a matrix definition the exact values take in (ExactValues.definition)
    if not any(name == n for n, _ in defs) and name not in domain.hypothesis_names \
            and not any(name == n for n, _, _ in bounds):
        judged = domain.exact.definition(name, mutant) if domain.exact.definition else None
        if isinstance(judged, tuple):
            return judged
        if judged is None:
            return "undecided", (f"the claim's exact values ({domain.exact.words}) do not cover "
                                 f"{name}")
        domain, redefined = dataclasses.replace(domain, exact=judged), True
    # a wider hypothesis or another definition is false, if at all, where the original claim
    # does not speak: compare there too (EXACT_OUTSIDE points, if drawn)
    widens = name in domain.hypothesis_names or any(name == n for n, _ in defs)
    originals = (*(e for _, e in domain.definitions), *domain.hypotheses) if widens else ()
    fns, error = _domain_functions(domain, *(e for _, e in defs), *hyps,
                                   *(e for _, e, _ in bounds), *originals)
    if error:
        return "undecided", f"cannot evaluate the mutated claim numerically ({error})"
    k, h, b = len(defs), len(hyps), len(bounds)
    dfns = [(names.index(n), g) for (n, _), g in zip(defs, fns[:k])]
    hfns, bfns = fns[k:k + h], list(zip(bounds, fns[k + h:k + h + b]))
    # only a mutant that widens the claim needs the original definitions and hypotheses
    dfns_o = [(names.index(n), g) for (n, _), g in zip(defs, fns[k + h + b:2 * k + h + b])]
    hfns_o = fns[2 * k + h + b:]
    rng = np.random.default_rng([seed, 0x657861])
    compared, outside, covered, between = 0, 0, set(), 0
    # a mutated bound leaves the others as printed, which the checks judge (a claim is mutated
    # only when its checks pass as printed); a wider hypothesis or definition changes them all
    needed = {n for n, _, _ in bounds} if widens or redefined else {name}
    where = f"{domain.words}; exact values: {domain.exact.words}"
    with mpmath.workdps(IMPLIED_DIGITS):
        tol = mpmath.mpf(10) ** -EXACT_TOLERANCE
        for raw in _domain_draws(domain, rng, grid=True):
            if compared >= EXACT_INSTANCES and (not widens or outside >= EXACT_OUTSIDE):
                break
            point = _defined(raw, dfns)
            if not _all_hold(hfns, point):
                continue
            out = widens and not _all_hold(hfns_o, _defined(raw, dfns_o))
            if compared >= EXACT_INSTANCES and not out:
                continue
            try:
                values = domain.exact.values(dict(zip(names, point)))
            except Exception as exc:  # noqa: BLE001 - a bug there must not end a mutate run
                return "undecided", (f"exact values: undecided, they raised "
                                     f"{type(exc).__name__}: {_one_line(exc)}")
            if not values:
                continue
            compared += 1
            outside += out
            shown = {n: mpmath.nstr(v, 8) for n, v in zip(names, point)}
            for (bname, _, weaker), g in bfns:
                if bname not in values:
                    continue
                covered.add(bname)
                # a value, or (attained, enclosure): false only against an attained value, true
                # only against the enclosure
                q, v = values[bname], _real(g, point)
                q, env = q if isinstance(q, tuple) else (q, q)
                if v is None:
                    return "false", (f"at {shown} the bound {bname} is not a finite real number "
                                     f"(the exact value is {mpmath.nstr(q, 12)})")
                scale = max(abs(q), abs(env), abs(v), mpmath.mpf(10) ** -IMPLIED_DIGITS)
                slack = (v - q) if weaker == "larger" else (q - v)
                if slack < -tol * scale:
                    return "false", (f"false at {shown}: {bname} = {mpmath.nstr(v, 12)}, "
                                     f"{'below' if weaker == 'larger' else 'above'} the exact "
                                     f"value {mpmath.nstr(q, 12)} ({domain.exact.words})")
                if ((v - env) if weaker == "larger" else (env - v)) < -tol * scale \
                        and bname in needed:
                    between += 1
    if compared < IMPLIED_MIN:
        return "undecided", (f"exact values: undecided, only {compared} of {DOMAIN_ATTEMPTS} points "
                             f"drawn and {GRID_POINTS} size-grid points are in the mutated claim's "
                             f"domain where they are computed "
                             f"({where})")
    missing = sorted(needed - covered)
    if between:
        return "undecided", (f"exact values: undecided, at {between} of the {compared} points "
                             f"compared a bound lies between the worst value attained and the "
                             f"enclosure ({where})")
    if missing:  # a claim is true only if all the bounds it changes are
        return "undecided", (f"exact values: undecided, they do not cover the bound "
                             f"{', '.join(missing)} ({where})")
    beyond = (f", {outside} of them where the original claim's hypotheses do not hold"
              if widens else "")
    return "true", (f"true where drawn: at all {compared} points of the mutated claim's domain "
                    f"drawn{beyond}, every bound ({', '.join(sorted(covered)) or 'none'}) holds "
                    f"for the exact value ({IMPLIED_DIGITS}-digit values; {where}): a true "
                    f"statement, which no sound check can refute")


def _narrower(formula: NamedFormula, original, mutant, seed: int,
              domain: Domain | None = None) -> tuple[bool, str]:
    """A hypothesis mutant is implied when it holds only where the original holds: sampled at
    NARROWER_ATTEMPTS points (sizes as ``_random_size`` draws them and the three size patterns,
    scalars log-uniform; with the claim's ``domain``, its definitions applied, so delta takes its
    defined value), one point where the mutant holds and the original does not makes it a
    different (not weaker) claim; so does one found with a symbol moved to the ends of its range
    (the symbols the mutant no longer reads, at points where it holds; every free scalar, at the
    first EXTREME_POINTS points, when it holds at fewer than IMPLIED_MIN).  A mutant that holds
    at no point drawn or moved says nothing there (a vacuous hypothesis, e.g. d >= 4 d^2 k^2):
    implied, and said so."""
    import mpmath

    symbols = _scalar_symbols(formula)
    if symbols is None or not all(isinstance(e, sympy.logic.boolalg.Boolean)
                                  for e in (original, mutant)):
        return False, "the implication test for a hypothesis applies to conditions on scalars"
    rng = np.random.default_rng([seed, 0x6E6172])
    if domain is not None:
        names = [s.name for s in domain.symbols]
        fns, error = _domain_functions(domain, original, mutant,
                                       *(e for _, e in domain.definitions))
        defs = [(names.index(n), g) for (n, _), g in zip(domain.definitions, fns[2:])] \
            if fns else []
        raws = _domain_draws(domain, rng)

        def define(raw):  # a moved point outside the claim's stated ranges is no point
            return _defined(raw, defs) if _in_ranges(domain, dict(zip(names, raw))) else None
        declared = domain.symbols
        where = f"{_domain_words(formula)}, {domain.words}"
    else:
        names = [s.name for s in symbols]
        fns, error = _lambdified([formula.locals()[n] for n in names], original, mutant)
        patterns = size_assignments(formula)

        def draws():
            for attempt in range(NARROWER_ATTEMPTS):
                sizes = patterns[attempt % len(patterns)] if attempt < 8 * len(patterns) else None
                values = _draw_domain(symbols, rng, sizes)
                yield [mpmath.mpf(int(values[n].p)) / int(values[n].q) for n in names]

        raws, define, declared = draws(), list, symbols
        where = _domain_words(formula)
    if error:
        return False, f"cannot evaluate the conditions numerically ({error})"
    f_o, f_m = fns[:2]
    # a symbol the original's condition reads and the mutant's does not (Lemma A.9's loss -> n):
    # the mutant holds whatever its value, so at points where the mutant holds it is moved to
    # the ends of its range, where the original may fail (the draws rarely get there)
    dropped = {x.name for x in original.free_symbols} - {x.name for x in mutant.free_symbols}
    moves = _movable(declared, domain, dropped)

    def only_mutant(q) -> bool:
        return bool(_all_hold([f_m], q)) and _all_hold([f_o], q) is False

    held, drawn, kept = 0, 0, []
    with mpmath.workdps(IMPLIED_DIGITS):
        for raw in raws:
            drawn += 1
            if len(kept) < EXTREME_POINTS:
                kept.append(raw)
            point = define(raw)
            if point is None:
                continue
            try:
                m, o = bool(f_m(*point)), bool(f_o(*point))
            except (ZeroDivisionError, ValueError, TypeError, OverflowError):
                continue
            if m and held < NARROWER_MOVED:
                o_fails = next(filter(only_mutant, map(define, _moved(raw, moves))), None)
                if o_fails is not None:
                    point, o = o_fails, False
            if m and not o:
                shown = {n: mpmath.nstr(v, 8) for n, v in zip(names, point)}
                return False, (f"not implied: the mutant hypothesis holds at {shown}, where the "
                               f"original does not (a different claim, not a weaker one)")
            held += m
        if held < IMPLIED_MIN:  # too few to judge by: each free scalar to the ends of its range
            # (Thm A.12's 4 d delta^(-4L-2) <= 1 holds only where delta is large, n small, and
            # xi >= 2 (4 delta)^(2L) then asks for xi far above the draws' 10^3)
            free = _movable(declared, domain)
            found = next((q for raw in kept for q in map(define, _moved(raw, free))
                          if only_mutant(q)), None)
            if found is not None:
                shown = {n: mpmath.nstr(v, 8) for n, v in zip(names, found)}
                return False, (f"not implied: the mutant hypothesis holds at {shown}, where the "
                               f"original does not (a different claim, not a weaker one; it "
                               f"holds at {held} of {drawn} instances drawn, this one has a "
                               f"scalar moved to the end of its range)")
    if held == 0:
        return True, (f"implied: the mutant hypothesis holds at none of {drawn} instances drawn "
                      f"({where}), so the claim under it says nothing there (vacuous)")
    if held < IMPLIED_MIN:  # too few to say where it holds (Lemma A.10's eps^(3L): 11 of 3000)
        proof = _narrower_proof(formula, original, mutant)
        if proof:  # Thm A.13's s_min >= d for s_min >= zeta: d >= 1 > zeta, yet rarely drawn
            return True, (f"implied: {proof} ({_domain_words(formula)}; it holds at {held} of "
                          f"{drawn} instances drawn): a narrower hypothesis, a weaker claim")
        return False, (f"not decided: the mutant hypothesis holds at only {held} of {drawn} "
                       f"instances drawn ({where})")
    return True, (f"implied: wherever the mutant hypothesis holds ({held} of {drawn} instances "
                  f"drawn, {where}) the original holds: a narrower hypothesis, a weaker claim")


NARROWER_MOVED = 40  # points where the mutant holds at which a dropped symbol is moved
EXTREME_POINTS = 200  # drawn points at which a rarely met mutant has each scalar moved


def _movable(declared, domain: Domain | None, names: set | None = None) -> list:
    """(index, ``_extreme_values``) of each declared scalar that no definition of the domain
    sets (of those in ``names`` only, if given): what ``_moved`` may move."""
    return [(i, _extreme_values(s)) for i, s in enumerate(declared)
            if (names is None or s.name in names)
            and not (domain is not None and domain.defines(s.name))]


def _moved(raw: list, moves: list) -> Iterator[list]:
    """The point with one scalar at a time set to each of its ``moves`` values."""
    for i, values in moves:
        for v in values:
            yield [*raw[:i], v, *raw[i + 1:]]


def _extreme_values(symbol) -> list:
    """Values at the ends of a declared scalar's range (``_narrower``'s moves), as mpf."""
    import mpmath

    if symbol.name in SIZE_NAMES:
        return [mpmath.mpf(v) for v in (1, 2, 10, 10 ** 3, 10 ** 6, 10 ** 12, 10 ** 30)]
    if symbol.unit:
        return [mpmath.mpf(10) ** -9, mpmath.mpf(1) / 2, 1 - mpmath.mpf(10) ** -9]
    return [mpmath.mpf(10) ** k for k in (-12, -6, -3, 0, 3, 6, 12, 30)]


def _domain_words(formula: NamedFormula) -> str:
    unit = [s.name for s in formula.symbols if s.unit]
    out = "scalars positive"
    if unit:
        out += f", {', '.join(unit)} in (0, 1)"
    if any(s.name in SIZE_NAMES for s in formula.symbols):
        out += ", sizes positive integers"
    return out
