"""Whether a mutant of a named formula says the same as the original (``Equivalence``,
``equivalence``), and how a survivor is judged by the claim's exact values (``judged_by_exact``).

Equivalence with the original (a mutant that cannot be refuted because it says the same thing) is
decided in three steps: ``simplification`` (sympy simplifies the difference to zero),
``identity`` (the two agree exactly, in rational arithmetic, at random instances of every symbol
for several sizes: integer matrix entries, scalars k or 1/k for a random integer k: a non-zero
rational function vanishes at such points with probability at most degree / range, the
Schwartz-Zippel bound; the reciprocals catch differences such as Max(0, x) vs Max(1, x) that only
show for small values), ``assumptions`` (they differ at a generic instance but agree on every
instance that respects the claim's assumptions, e.g. a matrix the claim declares symmetric), and
``scale`` (a positive multiple of a formula declared ``scale_free``).  Otherwise ``none``, with the instance where they differ.

A mutant that is not equivalent may still be a true consequence of the claim: for a scalar formula
marked ``weaker`` (an upper bound, a sufficient threshold: ``"larger"``; a lower bound:
``"smaller"``), a mutant that is at least as large (as small) on the claim's whole domain is a
looser bound that the original implies, and a sound check can never refute it.  Its kind is
``implied`` (still "equivalent" for the kill rate: it must survive, and a check that kills it
raised a false alarm).  It is decided on the domain where every declared scalar is positive,
``unit`` ones in (0, 1), sizes positive integers: first by sampling (``IMPLIED_INSTANCES``
instances: the three size patterns and random larger sizes, scalars log-uniform rationals in
[1e-3, 1e3], values compared at 50 digits), where one instance on the tighter side, or where the
mutant is not a finite real number although the original is, keeps the kind ``none``; then sympy
tries to prove it (the ratio or the difference of the two with a sign sympy can decide), and the
sampling stands where it cannot.  A tighter or incomparable mutant is ``none``, as before.

Implication and exact truth are ``verify.implication``'s to decide.
"""
from __future__ import annotations

import dataclasses
import itertools
import re
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import sympy
from sympy.matrices.exceptions import NonInvertibleMatrixError
from sympy.matrices.expressions.matexpr import MatrixExpr
from sympy.matrices.expressions.special import ZeroMatrix

from .domain import Domain, _is_matrix, size_assignments
from .formulas import SIZE_NAMES, NamedFormula, as_sympy, formula_str, formula_value, parse_in
from .implication import definition_implication, exact_truth, implication

EQUIVALENCE_KINDS = ("none", "simplification", "identity", "assumptions", "scale", "implied",
                     "true")


@dataclass(frozen=True)
class Equivalence:
    """Whether a mutant says the same as the original, and how that was established."""

    kind: str
    detail: str
    witness: dict | None = None
    stronger: str | None = None  # why a non-equivalent mutant claims more than the original
    false_at: str | None = None  # where the claim's exact values show a survivor false

    @property
    def equivalent(self) -> bool:
        """Not counted as non-equivalent: the same statement, or (``implied``) a weaker one that
        the original implies; either must survive a sound check."""
        return self.kind != "none"

    @property
    def implied(self) -> bool:
        return self.kind == "implied"

    @property
    def true(self) -> bool:
        """A different statement that the claim's exact values satisfy wherever drawn."""
        return self.kind == "true"

    def as_dict(self) -> dict:
        out = {"kind": self.kind, "detail": self.detail}
        if self.witness is not None:
            out["witness"] = self.witness
        if self.stronger is not None:
            out["stronger"] = self.stronger
        if self.false_at is not None:
            out["false_at"] = self.false_at
        return out


# ---------------------------------------------------------------------------------- equivalence
DRAWS = 2          # random instances per size assignment
VALUE_RANGE = 20   # integer entries in [-VALUE_RANGE, VALUE_RANGE]


def _where(assignment: dict) -> str:
    return "(" + ", ".join(f"{k}={v}" for k, v in assignment.items()) + ")"


def _draw(formula: NamedFormula, sizes: dict, rng: np.random.Generator, assume: bool) -> dict:
    """Random exact values for the formula's symbols (symmetric ones symmetric if ``assume``)."""
    values = dict(sizes)
    for s in formula.symbols:
        if s.kind == "matrix":
            rows, cols = (int(x) if x.isdigit() else sizes[x] for x in s.shape)
            m = rng.integers(-VALUE_RANGE, VALUE_RANGE + 1, size=(rows, cols))
            if assume and s.symmetric and rows == cols:
                m = np.triu(m) + np.triu(m, 1).T
            values[s.name] = sympy.Matrix(m.tolist())
        elif s.name not in SIZE_NAMES:
            v = int(rng.integers(1, VALUE_RANGE + 1))
            # half the draws in (0, 1]: integers alone hide a difference that only shows for
            # small values (Max(1, 4 K alpha^2) vs Max(2, 4 K alpha^2) agree for alpha >= 1)
            x = sympy.Rational(1, v) if rng.integers(2) else sympy.Integer(v)
            values[s.name] = x if s.positive else x * int(rng.choice([-1, 1]))
    related = [s for s in formula.symbols if s.equals is not None] if assume else []
    for _ in related:  # z_k = Z e_k, e_k = e_1: relations the claim assumes, in any order
        for s in related:
            values[s.name] = parse_in(s.equals, values, what=f"{s.name} := {s.equals}",
                                      expect="value")
    return values


class _Unevaluable(ValueError):
    """The formula has no exact number at this instance (a pole, or a form sympy leaves)."""


def _number(v) -> sympy.Expr:
    v = as_sympy(v)
    if isinstance(v, sympy.logic.boolalg.Boolean):
        # a condition (gatmiry2024's hypotheses): true or false at small sizes says nothing about
        # equivalence (n >= 4 k^2 d^2 is false at every size pattern); not decided, so "none"
        raise _Unevaluable("a condition, not a number")
    v = sympy.nsimplify(v)
    if not getattr(v, "is_number", False) or v.has(sympy.zoo, sympy.nan, sympy.oo):
        raise _Unevaluable(f"not a finite number: {v}")
    return v


def _value(expr: sympy.Basic, values: dict):
    """The exact value at an instance: a Matrix of numbers or a number."""
    out = formula_value(expr, values)
    if isinstance(out, sympy.MatrixBase):
        return sympy.Matrix(out).applyfunc(_number)
    if isinstance(out, MatrixExpr):
        raise _Unevaluable("sympy left a matrix expression unevaluated")
    return _number(out)


def _as_matrix(v, shape) -> sympy.Matrix | None:
    if isinstance(v, sympy.MatrixBase):
        return sympy.Matrix(v)
    if v == 0:
        return sympy.zeros(*shape)
    return sympy.Matrix([[v]]) if tuple(shape) == (1, 1) else None


def _differs(a, b) -> bool:
    """Exact comparison of two values (a zero scalar equals a zero matrix)."""
    if _is_matrix(a) or _is_matrix(b):
        shape = a.shape if _is_matrix(a) else b.shape
        a, b = _as_matrix(a, shape), _as_matrix(b, shape)
        if a is None or b is None or a.shape != b.shape:
            return True
        return any(x != y for x, y in zip(a, b))
    return a != b


def _instances(formula, original, mutant, rng, assume: bool) -> Iterator[tuple]:
    """(sizes, values, original's value, mutant's value) at DRAWS random instances per size
    assignment; an instance where either has no exact value is redrawn (up to 5 times)."""
    for sizes in size_assignments(formula):
        for _ in range(DRAWS):
            for _attempt in range(5):  # redraw when an inverse is singular
                values = _draw(formula, sizes, rng, assume)
                try:
                    a, b = _value(original, values), _value(mutant, values)
                except (ZeroDivisionError, ValueError, TypeError, NonInvertibleMatrixError):
                    continue  # a pole, a singular inverse, or a form sympy cannot evaluate
                yield sizes, values, a, b
                break


def _compare(formula, original, mutant, rng, assume: bool) -> tuple[int, dict | None]:
    """(instances compared, the first instance where they differ or None)."""
    compared = 0
    for sizes, values, a, b in _instances(formula, original, mutant, rng, assume):
        compared += 1
        if _differs(a, b):
            return compared, _witness(formula, values, sizes, a, b)
    return compared, None


def _witness(formula, values, assignment, a, b) -> dict:
    shown = {k: (str(v.tolist()) if isinstance(v, sympy.MatrixBase) else str(v))
             for k, v in values.items() if k in {s.name for s in formula.symbols}}
    if _is_matrix(a) and _is_matrix(b) and a.shape == b.shape:
        idx = next(i for i, (x, y) in enumerate(zip(a, b)) if x != y)
        entry = divmod(idx, a.shape[1])
        return {"sizes": assignment, "values": shown, "entry": list(entry),
                "original": str(a[entry]), "mutant": str(b[entry])}
    return {"sizes": assignment, "values": shown, "original": str(a), "mutant": str(b)}


PROOF_MAX_POWER = 3   # the symbolic illustration expands matrix powers up to this exponent


def _symbolic_degree_too_high(expr, sizes: dict) -> bool:
    """A matrix power above PROOF_MAX_POWER at these sizes: with symbolic entries its expansion
    grows like (entries)^power (tr (I - A Sigma A)^10 at d = 2 took 7 GB and four minutes)."""
    for p in expr.atoms(sympy.MatPow):
        e = as_sympy(p.exp.xreplace({s: sympy.Integer(sizes[s.name]) for s in p.exp.free_symbols
                                          if s.name in sizes}))
        if not (e.is_Integer and abs(int(e)) <= PROOF_MAX_POWER):
            return True
    return False


def _symbolic_proof(formula, original, mutant, assume: bool) -> str:
    """The difference expanded with symbolic entries at the smallest sizes (no inverses)."""
    if original.has(sympy.Inverse) or mutant.has(sympy.Inverse):
        return ""
    sizes = size_assignments(formula)[0]
    if _symbolic_degree_too_high(original, sizes) or _symbolic_degree_too_high(mutant, sizes):
        return ""
    values = dict(sizes)
    for s in formula.symbols:
        if s.kind == "matrix":
            rows, cols = (int(x) if x.isdigit() else sizes[x] for x in s.shape)
            if assume and s.symmetric:
                values[s.name] = sympy.Matrix(rows, cols, lambda i, j, s=s: sympy.Symbol(
                    f"{s.name}_{min(i, j)}{max(i, j)}"))
            else:
                values[s.name] = sympy.Matrix(rows, cols,
                                              lambda i, j, s=s: sympy.Symbol(f"{s.name}_{i}{j}"))
        elif s.name not in SIZE_NAMES:
            values[s.name] = sympy.Symbol(s.name)
    try:
        a, b = formula_value(original, values), formula_value(mutant, values)
        shape = a.shape if _is_matrix(a) else getattr(b, "shape", (1, 1))
        a, b = _as_matrix(a, shape), _as_matrix(b, shape)
        if a is None or b is None or a.shape != b.shape or any(
                sympy.expand(x - y) != 0 for x, y in zip(a, b)):
            return ""
    except Exception:  # noqa: BLE001 - the proof is an illustration; the sampling decided
        return ""
    where = _where(sizes)
    sym = [s.name for s in formula.symbols if assume and s.symmetric]
    entries = "symbolic entries" + (f" ({', '.join(sym)} symmetric)" if sym else "")
    return f"; with {entries} at sizes {where} the difference expands to 0"


def equivalence(formula: NamedFormula, mutant_text: str, seed: int = 0,
                base: str | None = None, domain: Domain | None = None) -> Equivalence:
    """Is the mutant the same statement as the original formula (the text ``base``, default the
    paper's), as an identity or under the claim's declared assumptions?"""
    original, mutant = formula.parse(base), formula.parse(mutant_text)
    diff_text = f"({formula_str(mutant)}) - ({formula_str(original)})"
    if original.has(sympy.Sum) and _bound_renamed(original) == _bound_renamed(mutant):
        return Equivalence("simplification", "the same formula up to the names of its summation "
                                             "indices")
    try:
        if _is_matrix(original) or _is_matrix(mutant):
            simplified = sympy.simplify((mutant - original).doit())
        elif not (original.has(MatrixExpr) or mutant.has(MatrixExpr)):
            simplified = sympy.simplify(mutant - original)
        else:  # a scalar of matrix expressions (traces): simplify is slow there; sample
            simplified = None
        if simplified is not None and (simplified == 0 or isinstance(simplified, ZeroMatrix)):
            return Equivalence("simplification", f"simplify({diff_text}) = 0")
    except Exception:  # noqa: BLE001 - sympy may fail to simplify a matrix expression; sample
        pass
    rng = np.random.default_rng([seed, 0x6D75])
    compared, witness = _compare(formula, original, mutant, rng, assume=False)
    sizes = ", ".join(_where(a) for a in size_assignments(formula)) or "(no sizes)"
    if witness is None and compared == 0:
        # a condition has no exact number to compare; a hypothesis may still be narrower
        if formula.weaker == "narrower":
            implied, why = implication(formula, original, mutant, seed, domain=domain)
            if implied:
                return Equivalence("implied", why)
            wider, why_w = implication(formula, mutant, original, seed, domain=domain)
            return Equivalence("none", why, stronger=_as_stronger(why_w) if wider else None)
        return Equivalence("none", "could not evaluate the formulas at any instance")
    if witness is None:
        return Equivalence("identity", f"equal in exact arithmetic at {compared} random rational "
                                       f"instances, sizes {sizes}"
                           + _symbolic_proof(formula, original, mutant, False))
    assumed = ([f"{s.name} symmetric" for s in formula.symbols if s.symmetric]
               + [f"{s.name} = {s.equals}" for s in formula.symbols if s.equals is not None])
    if assumed:
        compared_a, witness_a = _compare(formula, original, mutant, rng, assume=True)
        if witness_a is None and compared_a:
            proof = "" if any(s.equals for s in formula.symbols) else \
                _symbolic_proof(formula, original, mutant, True)
            return Equivalence(
                "assumptions",
                f"the claim assumes {', '.join(assumed)}; equal in exact arithmetic at "
                f"{compared_a} random rational instances with {', '.join(assumed)}, sizes "
                f"{sizes}{proof} (they differ for an instance without it)", witness)
        witness = witness_a or witness
    if formula.scale_free or formula.sign_free:
        factor = _multiple(formula, original, mutant, rng)
        if factor is not None and factor != 1 and (
                (formula.scale_free and factor.is_positive)
                or (formula.sign_free and factor == -1)):
            kind, why = (("any positive multiple", formula.scale_free) if factor.is_positive
                         else ("the negation", formula.sign_free))
            return Equivalence("scale", f"{factor} times the original at every instance compared "
                                        f"(sizes {sizes}); the claim is the same statement for "
                                        f"{kind} of {formula.name}: {why}", witness)
    detail = "differs from the original"
    if domain is not None and formula.weaker is None and domain.defines(formula.name):
        kind, why = definition_implication(formula.name, mutant, seed, domain)
        if kind != "none":
            return Equivalence(kind, why, witness)
        return Equivalence("none", f"{detail} ({why})", witness,
                           _stronger_definition(formula.name, original, mutant, seed, domain))
    if formula.weaker is not None:
        implied, why = implication(formula, original, mutant, seed, domain=domain)
        if implied:
            return Equivalence("implied", why, witness)
        detail += f" ({why})"
        references = (((formula.proof, "proof's bound", formula.proof_source),
                       (formula.sharp, "sharp bound", "the sharp bound the checks derive"))
                      if formula.weaker != "narrower" else ())
        for reference, name, source in references:
            if reference is not None:
                implied, why_p = _implied_by_bound(formula, mutant, seed, domain, reference(),
                                                   name, source)
                if implied:
                    return Equivalence("implied", why_p, witness)
                detail += f"; {why_p}"
        stronger, why_s = implication(formula, mutant, original, seed, domain=domain)
        return Equivalence("none", detail, witness, _as_stronger(why_s) if stronger else None)
    return Equivalence("none", detail, witness)


def judged_by_exact(eq: Equivalence, formula: NamedFormula, mutant_text: str, seed: int,
                    domain: Domain | None) -> Equivalence:
    """A surviving mutant that is neither the same statement nor implied, judged by the claim's
    exact values where it has them (``exact_truth``): ``true``, or still ``none`` with where it
    is false (``false_at``).  Only for survivors: a killed mutant has an exact counterexample,
    which a sampled "true" must not overrule (a hypothesis n >= 4 d^4 fails at d = 1, n = 4,
    k = 5, a corner the draws rarely reach)."""
    if domain is None or domain.exact is None or eq.kind != "none":
        return eq
    kind, why = exact_truth(formula.name, formula.parse(mutant_text), seed, domain)
    if kind == "true":
        return Equivalence("true", why, eq.witness, eq.stronger)
    if kind == "false":
        return dataclasses.replace(eq, false_at=why)
    return dataclasses.replace(eq, detail=f"{eq.detail}; {why}")


def _as_stronger(why: str) -> str | None:
    """The implication ``why`` of original-from-mutant, read as "the mutant claims more" (None
    when the original is only vacuous where it was sampled: that says nothing)."""
    if "vacuous" in why:
        return None
    other = {"mutant": "original", "original": "mutant"}
    swapped = re.sub(r"mutant|original", lambda m: other[m.group()], why.removeprefix("implied: "))
    swapped = re.sub(r"[:,] (a looser (upper|lower) bound \(a (larger|smaller) value\)|"
                     r"a narrower hypothesis, a weaker claim|a weaker claim)", "", swapped)
    return f"a stronger claim than the original, which follows from it: {swapped}"


def _stronger_definition(name: str, original, mutant, seed: int, domain: Domain) -> str | None:
    """Why the claim with the mutant definition of ``name`` implies the claim (None if not)."""
    mutated = tuple((n, mutant if n == name else e) for n, e in domain.definitions)
    words = domain.words.replace(f"{name} := {original}", f"{name} := {mutant}")
    kind, why = definition_implication(name, original, seed,
                                       dataclasses.replace(domain, definitions=mutated,
                                                           words=words))
    return _as_stronger(why) if kind == "implied" else None


def _implied_by_bound(formula: NamedFormula, mutant, seed: int, domain: Domain | None,
                      chain: sympy.Expr, name: str, source: str) -> tuple[bool, str]:
    """Is the mutant on the weaker side of ``chain`` (the bound the paper's proof gives, or the
    sharp bound the checks derive: ``source``) on the whole domain?  Then that argument proves
    it, even where it is tighter than the printed bound."""
    local = formula.locals()
    chain = chain.xreplace({s: local[s.name] for s in chain.free_symbols if s.name in local})
    if chain.free_symbols - set(local.values()):
        return False, f"the {name} has symbols the formula does not declare"
    implied, why = implication(formula, chain, mutant, seed, allow_equal=True, domain=domain)
    if implied:
        return True, (f"implied by {source}: " + why.removeprefix("implied: ")
                      .replace("original", name) + f" (the {name}: {chain})")
    return False, why.replace("original", name)


def _multiple(formula: NamedFormula, original, mutant, rng) -> sympy.Expr | None:
    """c with mutant = c * original at every random instance (one c for all; the claim's
    assumptions applied), else None."""
    factor = None
    for _, _, a, b in _instances(formula, original, mutant, rng, assume=True):
        shape = a.shape if _is_matrix(a) else (b.shape if _is_matrix(b) else (1, 1))
        a, b = _as_matrix(a, shape), _as_matrix(b, shape)
        if a is None or b is None or a.shape != b.shape:
            return None
        for x, y in zip(a, b):
            if x == 0:
                if y != 0:
                    return None
                continue
            c = sympy.nsimplify(y / x)
            if factor is None:
                factor = c
            if c != factor:
                return None
    return factor


def _bound_renamed(expr: sympy.Basic) -> sympy.Basic:
    """``expr`` with the variables of its sums renamed by position (_b0, _b1, ... in the order
    sympy lists the limits): two formulas that differ only in those names become equal."""
    names = itertools.count()

    def rename(e):
        if isinstance(e, sympy.Sum):
            body, limits = rename(e.function), []
            for x, lo, hi in e.limits:
                b = sympy.Symbol(f"_b{next(names)}", integer=True)
                body = body.xreplace({x: b})
                limits.append((b, lo, hi))
            return sympy.Sum(body, *limits)
        return e.func(*[rename(a) for a in e.args]) if e.args else e

    return rename(expr)
