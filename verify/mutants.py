"""Mutants of a named formula, generated from its sympy expression tree, and their equivalence.

Operators (each applied at every position where it makes sense):

- ``constant``: a number c becomes c + 1 and c - 1 (coefficients, exponents, offsets such as the
  2 in d + 2); a zero matrix becomes a ones matrix; an identity becomes twice the identity;
- ``swap``: one occurrence of a symbol becomes another declared symbol of the same kind and shape
  (scalars for scalars, d x 1 for d x 1, ...), and two such symbols are exchanged everywhere;
- ``drop_term``: one term of a sum is removed;
- ``sign``: one term of a sum, or the whole formula, is negated;
- ``transpose``: a transpose is removed, or one is added to a matrix symbol.

An explicit block matrix (``BlockMatrix([[A, B], [C, D]])``) is mutated inside its blocks and
rebuilt with the same grid; a block that no longer fits its row or column is an invalid mutant.
Shapes (the ``d`` in ``Identity(d)`` or in a matrix symbol's dimensions) are never mutated.  A
mutant is kept as text (``formula_str``) and read back with the formula's own parser, so an
ill-typed mutant (a shape error) is reported as invalid, exactly as ``--set`` would reject it.

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
"""
from __future__ import annotations

import dataclasses
import itertools
import re
from dataclasses import dataclass
from typing import Any, Callable, Iterator, Mapping

import numpy as np
import sympy
from sympy.matrices.exceptions import NonInvertibleMatrixError
from sympy.matrices.expressions.matexpr import MatrixExpr
from sympy.matrices.expressions.special import Identity, OneMatrix, ZeroMatrix

from .errors import UsageError
from .formulas import SIZE_NAMES, NamedFormula, as_sympy, formula_str, formula_value, parse_in

OPERATORS = ("constant", "swap", "drop_term", "sign", "transpose")
EQUIVALENCE_KINDS = ("none", "simplification", "identity", "assumptions", "scale", "implied",
                     "true")

# nodes whose arguments are a name and shapes, never mutated
_LEAF_NODES = (sympy.MatrixSymbol, Identity, ZeroMatrix, OneMatrix)


@dataclass(frozen=True)
class Mutant:
    """A mutated formula: which operator made it, what it changed, and its text (reads back)."""

    formula: str
    operator: str
    change: str
    text: str


@dataclass(frozen=True)
class Invalid:
    """A mutation that does not type-check (e.g. a transpose that breaks a product's shapes) or
    uses a summation index outside its sum."""

    formula: str
    operator: str
    change: str
    text: str
    error: str


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


@dataclass(frozen=True)
class Domain:
    """Where a claim's bounds are asserted: its hypotheses hold (formulas marked
    ``weaker="narrower"``) and a symbol the claim also defines as a formula (gatmiry2024's
    delta := (8 L d / sqrt(n))^(1/(2L))) takes that formula's value.  ``symbols`` are all the
    claim's declared scalars, drawn for a point before the definitions are applied."""

    symbols: tuple
    definitions: tuple          # (name, expression) in the declared symbols
    hypotheses: tuple           # conditions in the declared symbols
    words: str
    bounds: tuple = ()          # (name, expression, weaker) of the claim's scalar bounds
    hypothesis_names: tuple = ()  # the formula names of ``hypotheses``, in order
    exact: Any = None           # the claim's ExactValues, or None
    ranges: tuple = ()          # the claim's stated ranges of sizes (Claim.ranges), relations

    def defines(self, name: str) -> bool:
        return any(n == name for n, _ in self.definitions)

    @property
    def restricts(self) -> bool:
        """Whether it is narrower than every positive value (hypotheses or stated ranges): a
        claim with exact values and neither has a domain only for ``exact_truth``."""
        return bool(self.hypotheses or self.ranges)


def claim_domain(formulas, fixed: dict | None = None, exact=None,
                 ranges: tuple[str, ...] = ()) -> Domain | None:
    """The domain of a claim with hypotheses, stated ranges or exact values (None without: bounds
    then hold for every positive value); ``fixed`` holds corrected texts, which define the claim
    when it is corrected; ``exact`` is the claim's ExactValues (``exact_truth``); ``ranges`` are
    its Claim.ranges."""
    fixed = fixed or {}
    hyps = [f for f in formulas if f.weaker == "narrower"]
    if not hyps and not ranges and exact is None:
        return None
    symbols = {}
    for f in formulas:
        for s in f.symbols:
            if s.kind == "scalar":
                symbols.setdefault(s.name, s)
    local = {s.name: s.sympy() for s in symbols.values()}
    stated = tuple(parse_in(r, local, what=f"range {r!r}") for r in ranges)
    for r, rel in zip(ranges, stated):
        unknown = sorted({x.name for x in rel.free_symbols} - set(local))
        if unknown or not isinstance(rel, sympy.core.relational.Relational):
            raise UsageError(f"range {r!r} is not a condition in the claim's scalars"
                             + (f" (unknown: {', '.join(unknown)})" if unknown else ""))
    defs = tuple((f.name, f.parse(fixed.get(f.name))) for f in formulas
                 if f.name in symbols and f.shape is None and f.weaker is None)
    parsed = tuple(f.parse(fixed.get(f.name)) for f in hyps)
    bounds = tuple((f.name, f.parse(fixed.get(f.name)), f.weaker) for f in formulas
                   if f.weaker in ("larger", "smaller") and f.shape is None
                   and all(s.kind == "scalar" for s in f.symbols))
    stated_words = [*ranges, *(fixed.get(f.name, f.text) for f in hyps)]
    words = (("the claim's hypotheses hold (" + "; ".join(stated_words) + ")") if stated_words
             else "scalars positive, unit ones in (0, 1), sizes positive integers") \
        + "".join(f", {n} := {e}" for n, e in defs)
    return Domain(tuple(symbols.values()), defs, parsed, words, bounds,
                  tuple(f.name for f in hyps), exact, stated)


# ---------------------------------------------------------------------------------- the tree
Path = tuple[int, ...]


def _positions(expr: sympy.Basic, path: Path = ()) -> Iterator[tuple[Path, sympy.Basic]]:
    """Every mutable node with its path of argument indices (shape arguments excluded)."""
    yield path, expr
    if isinstance(expr, _LEAF_NODES):
        return
    if isinstance(expr, sympy.MatrixBase):
        # an explicit (block) matrix: args are (rows, cols, Tuple(entries)); the shape is fixed,
        # only the entries (blocks) are mutated, and _replace rebuilds the same rows x cols grid
        for k, entry in enumerate(expr.args[2]):
            yield from _positions(entry, path + (2, k))
        return
    for i, arg in enumerate(expr.args):
        if isinstance(arg, sympy.Basic) and not isinstance(arg, sympy.core.symbol.Str):
            yield from _positions(arg, path + (i,))


def _node(expr: sympy.Basic, path: Path) -> sympy.Basic:
    for i in path:
        expr = expr.args[i]
    return expr


def _replace(expr: sympy.Basic, path: Path, new: sympy.Basic) -> sympy.Basic:
    if not path:
        return new
    args = list(expr.args)
    args[path[0]] = _replace(args[path[0]], path[1:], new)
    return expr.func(*args)


def _exchange(expr: sympy.Basic, mapping: dict) -> sympy.Basic:
    """Replace symbols by ``mapping`` everywhere except inside shapes."""
    if expr in mapping:
        return mapping[expr]
    if isinstance(expr, _LEAF_NODES) or not expr.args:
        return expr
    if isinstance(expr, sympy.MatrixBase):
        rows, cols, entries = expr.args
        return expr.func(rows, cols, sympy.Tuple(*[_exchange(a, mapping) for a in entries]))
    return expr.func(*[_exchange(a, mapping) if isinstance(a, sympy.Basic) else a
                       for a in expr.args])


def _is_matrix(expr) -> bool:
    return isinstance(expr, (MatrixExpr, sympy.MatrixBase))


def _short(expr: sympy.Basic, limit: int = 60) -> str:
    text = formula_str(expr)
    return text if len(text) <= limit else text[:limit - 3] + "..."


# ---------------------------------------------------------------------------------- operators
Candidate = tuple[str, str, Callable[[], sympy.Basic]]  # operator, change, build


def _constant(expr: sympy.Basic) -> Iterator[Candidate]:
    for path, node in _positions(expr):
        if isinstance(node, sympy.Number):
            parent = _node(expr, path[:-1]) if path else node
            where = f" in {_short(parent)}" if path else ""
            for new in (node + 1, node - 1):
                yield ("constant", f"{node} -> {new}{where}",
                       lambda p=path, v=new: _replace(expr, p, v))
        elif isinstance(node, ZeroMatrix):
            yield ("constant", f"{_short(node)} -> ones",
                   lambda p=path, n=node: _replace(expr, p, OneMatrix(*n.shape)))
        elif isinstance(node, Identity):
            yield ("constant", f"{_short(node)} -> 2*{_short(node)}",
                   lambda p=path, n=node: _replace(expr, p, sympy.MatMul(2, n)))


def _same_type(a: sympy.Basic, b: sympy.Basic) -> bool:
    if isinstance(a, sympy.MatrixSymbol) and isinstance(b, sympy.MatrixSymbol):
        return tuple(a.shape) == tuple(b.shape)
    return isinstance(a, sympy.Symbol) and isinstance(b, sympy.Symbol)


def _swap(expr: sympy.Basic, symbols: list[sympy.Basic]) -> Iterator[Candidate]:
    occurrences = [(p, n) for p, n in _positions(expr) if n in symbols]
    for path, node in occurrences:
        count = sum(1 for _, n in occurrences if n == node)
        for other in symbols:
            if other != node and _same_type(node, other):
                which = "" if count == 1 else f" (one of {count} occurrences)"
                yield ("swap", f"{node} -> {other}{which}",
                       lambda p=path, o=other: _replace(expr, p, o))
    present = [s for s in symbols if any(n == s for _, n in occurrences)]
    for i, a in enumerate(present):
        for b in present[i + 1:]:
            if _same_type(a, b):
                yield ("swap", f"{a} <-> {b} everywhere",
                       lambda a=a, b=b: _exchange(expr, {a: b, b: a}))


def _each_argument(expr: sympy.Basic, kinds: tuple) -> Iterator[tuple]:
    """(path, node, i, argument, build without it) for every argument of every node of
    ``kinds`` with two arguments or more."""
    for path, node in _positions(expr):
        if isinstance(node, kinds) and len(node.args) >= 2:
            for i, arg in enumerate(node.args):
                rest = node.args[:i] + node.args[i + 1:]
                yield path, node, i, arg, (lambda p=path, r=rest, n=node:
                                           _replace(expr, p, n.func(*r)))


def _terms(expr: sympy.Basic) -> Iterator[Candidate]:
    for path, node, i, term, dropped in _each_argument(expr, (sympy.Add, sympy.MatAdd)):
        yield ("drop_term", f"drop {_short(term)} from {_short(node)}", dropped)
        yield ("sign", f"negate {_short(term)} in {_short(node)}",
               lambda p=path, i=i, n=node: _replace(
                   expr, p, n.func(*[(-a if j == i else a) for j, a in enumerate(n.args)])))
    yield ("sign", "negate the whole formula", lambda: -expr)


def _transpose(expr: sympy.Basic) -> Iterator[Candidate]:
    for path, node in _positions(expr):
        if isinstance(node, sympy.Transpose):
            yield ("transpose", f"remove the transpose of {_short(node.arg)}",
                   lambda p=path, n=node: _replace(expr, p, n.arg))
        elif isinstance(node, sympy.MatrixSymbol):
            yield ("transpose", f"transpose {node} (this occurrence)",
                   lambda p=path, n=node: _replace(expr, p, sympy.Transpose(n)))


def _factors(expr: sympy.Basic, symbols: list[sympy.Basic]) -> Iterator[Candidate]:
    """One factor dropped from a product, or one matrix symbol (or its transpose) multiplied
    onto a matrix-valued subterm, on either side: the neighbourhood a correction searches
    (``verify/corrections.py``) beyond the mutation operators."""
    for _, node, _, factor, dropped in _each_argument(expr, (sympy.Mul, sympy.MatMul)):
        yield ("drop_factor", f"drop {_short(factor)} from {_short(node)}", dropped)
    matrices = [s for s in symbols if isinstance(s, sympy.MatrixSymbol)]
    for path, node in _positions(expr):
        if not _is_matrix(node) or isinstance(node, (Identity, ZeroMatrix, OneMatrix)):
            continue
        for m in matrices:
            for factor in (m, sympy.Transpose(m)):
                yield ("insert_factor", f"{_short(node)} -> {_short(factor)}*{_short(node)}",
                       lambda p=path, n=node, f=factor: _replace(expr, p, sympy.MatMul(f, n)))
                yield ("insert_factor", f"{_short(node)} -> {_short(node)}*{_short(factor)}",
                       lambda p=path, n=node, f=factor: _replace(expr, p, sympy.MatMul(n, f)))


def _signs(expr: sympy.Basic, symbols: list[sympy.Basic], most: int = 6) -> Iterator[Candidate]:
    """The signs of two or more terms of one sum flipped at once (a sign on a group the paper
    writes as one sum), smallest groups first, for sums of at most ``most`` terms."""
    from itertools import combinations

    for path, node in _positions(expr):
        if isinstance(node, (sympy.Add, sympy.MatAdd)) and 3 <= len(node.args) <= most:
            for size in range(2, len(node.args)):
                for group in combinations(range(len(node.args)), size):
                    shown = ", ".join(_short(node.args[i], 30) for i in group)
                    yield ("signs", f"negate {shown} in {_short(node)}",
                           lambda p=path, g=group, n=node: _replace(expr, p, n.func(
                               *[(-a if j in g else a) for j, a in enumerate(n.args)])))


CORRECTION_OPERATORS = {"factors": _factors, "signs": _signs}


def generate(formula: NamedFormula, base: str | None = None, extra: tuple[str, ...] = ()
             ) -> tuple[list[Mutant], list[Invalid]]:
    """Every distinct mutant of ``formula`` (of the text ``base``, default the paper's) that
    reads back, and the ill-typed ones; ``extra`` names operators of ``CORRECTION_OPERATORS``
    to apply after the mutation operators (not used by ``mutate``)."""
    original = formula.parse(base)
    symbols = [s.sympy() for s in formula.symbols]
    candidates = [*_constant(original), *_swap(original, symbols), *_terms(original),
                  *_transpose(original)]
    for name in extra:
        candidates += list(CORRECTION_OPERATORS[name](original, symbols))
    seen = {formula_str(original)}
    mutants, invalid = [], []
    for operator, change, build in candidates:
        try:
            text = formula_str(build())
        except Exception as exc:  # sympy raises ShapeError, TypeError, ... on ill-typed trees
            invalid.append(Invalid(formula.name, operator, change, "", _one_line(exc)))
            continue
        if text in seen:
            continue
        grid = _block_grid_error(build())
        if grid:
            seen.add(text)
            invalid.append(Invalid(formula.name, operator, change, text,
                                   f"formula {formula.name}: {text!r} is ill-typed: {grid}"))
            continue
        try:
            parsed = formula.parse(text, strict=True)
        except UsageError as exc:
            seen.add(text)
            invalid.append(Invalid(formula.name, operator, change, text, str(exc)))
            continue
        scope = _scope_error(original, parsed)
        if scope:
            seen.add(text)
            invalid.append(Invalid(formula.name, operator, change, text,
                                   f"formula {formula.name}: {text!r} is ill-scoped: {scope}"))
            continue
        canonical = formula_str(parsed)
        if canonical in seen or parsed == original:
            seen.add(text)
            continue
        seen.update({text, canonical})
        mutants.append(Mutant(formula.name, operator, change, text))
    return mutants, invalid


def _summation_indices(expr: sympy.Basic) -> set[str]:
    """The names of the variables bound by the sums in ``expr``."""
    return {str(lim[0]) for e in expr.atoms(sympy.Sum) for lim in e.limits}


def _scope_error(original: sympy.Basic, mutant: sympy.Basic) -> str:
    """A summation index of the original that the mutant uses outside its sum (free in the
    body, or in the limits of its own sum), or ""; such a formula is not a statement."""
    loose = sorted(_summation_indices(original) & {str(x) for x in mutant.free_symbols})
    if not loose:
        return ""
    return (f"the summation index {', '.join(loose)} occurs outside its sum (free, or in its "
            f"own limits)")


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


def _block_grid_error(expr: sympy.Basic) -> str:
    """The first block of a block matrix whose shape does not fit its row and column of the
    grid (sympy's own message for that is about filling a 2-D space), or ""."""
    for node in sympy.preorder_traversal(expr):
        if not isinstance(node, sympy.BlockMatrix):
            continue
        grid = node.args[0]
        if not isinstance(grid, sympy.MatrixBase):
            continue
        blocks = grid.tolist()
        shape = [[getattr(b, "shape", (1, 1)) for b in row] for row in blocks]
        for i, row in enumerate(blocks):
            for j, b in enumerate(row):
                h, w = shape[i][j]
                for jj in range(len(row)):
                    if jj != j and sympy.simplify(shape[i][jj][0] - h) != 0:
                        return (f"row {i} of the block grid: {formula_str(b)} is {h} high but "
                                f"{formula_str(row[jj])} is {shape[i][jj][0]} high")
                for ii in range(len(blocks)):
                    if ii != i and sympy.simplify(shape[ii][j][1] - w) != 0:
                        return (f"column {j} of the block grid: {formula_str(b)} is {w} wide "
                                f"but {formula_str(blocks[ii][j])} is {shape[ii][j][1]} wide")
    return ""


def _one_line(exc: Exception) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[-1] if text else ''}"


# ---------------------------------------------------------------------------------- equivalence
DRAWS = 2          # random instances per size assignment
VALUE_RANGE = 20   # integer entries in [-VALUE_RANGE, VALUE_RANGE]
# three assignments of distinct small sizes, so that a swapped size (n for d) shows
_SIZE_PATTERNS = ((2, 3, 4, 5, 6, 7, 8, 9, 10), (3, 5, 2, 6, 4, 7, 9, 8, 10),
                  (4, 2, 5, 3, 7, 6, 8, 10, 9))


def size_assignments(formula: NamedFormula) -> list[dict]:
    """Concrete sizes for the size names the formula uses (as scalars or in shapes)."""
    used = {s.name for s in formula.symbols if s.kind == "scalar" and s.name in SIZE_NAMES}
    for s in formula.symbols:
        if s.kind == "matrix":
            used |= {x for x in s.shape if not x.isdigit()}
    used |= {x for x in (formula.shape or ()) if not x.isdigit()}
    order = [n for n in SIZE_NAMES if n in used] + sorted(used - set(SIZE_NAMES))
    return [dict(zip(order, pattern)) for pattern in _SIZE_PATTERNS]


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
PROOF_OPS = 400           # larger differences are left to the sampling (simplify is slow there)


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


def _conditions(expr: sympy.Basic) -> list | None:
    """A conjunction of inequalities as [(g, strict, condition)] meaning g >= 0 (g > 0 if
    strict), or None (an Or, an equation, anything else)."""
    out = []
    for c in (expr.args if isinstance(expr, sympy.And) else (expr,)):
        if isinstance(c, (sympy.GreaterThan, sympy.StrictGreaterThan)):
            out.append((c.lhs - c.rhs, isinstance(c, sympy.StrictGreaterThan), c))
        elif isinstance(c, (sympy.LessThan, sympy.StrictLessThan)):
            out.append((c.rhs - c.lhs, isinstance(c, sympy.StrictLessThan), c))
        else:
            return None
    return out


def _sign_proved(expr: sympy.Expr, strict: bool) -> bool:
    """Is expr >= 0 (> 0 if strict) for all values of its (assumption-carrying) symbols? Decided
    on the expanded numerator and denominator of its ``together`` form, then on ``simplify``."""
    want = "is_positive" if strict else "is_nonnegative"
    if expr.is_zero:
        return not strict
    num, den = sympy.fraction(sympy.together(expr))
    num, den = sympy.expand(num), sympy.expand(den)
    if (getattr(num, want) and den.is_positive) or \
            (getattr(-num, want) and den.is_negative):
        return True
    if bool(getattr(sympy.simplify(expr), want)):
        return True
    return _product_sign(sympy.factor_terms(sympy.expand_power_base(expr)), strict)


def _product_sign(expr: sympy.Expr, strict: bool) -> bool:
    """A product of positive factors and differences of powers a^p - b^p (``_power_difference``)
    is >= 0 (> 0 if strict): the form 4 d ((9 L d / sqrt(n))^p - (8 L d / sqrt(n))^p) of a
    larger delta in 4 d delta^{4L-2} <= 1, p = (2L - 1)/L, which sympy leaves undecided."""
    factors = expr.args if isinstance(expr, sympy.Mul) else (expr,)
    return any(isinstance(f, sympy.Add) for f in factors) and all(
        f.is_positive or (not strict and f.is_nonnegative) or _power_difference(f, strict)
        for f in factors)


def _power_difference(expr: sympy.Expr, strict: bool) -> bool:
    """a^p - b^p >= 0 (> 0 if strict) from a - b >= 0 (> 0), p > 0 and b >= 0."""
    if not (isinstance(expr, sympy.Add) and len(expr.args) == 2):
        return False
    for plus, minus in (expr.args, expr.args[::-1]):
        minus = -minus
        if isinstance(plus, sympy.Pow) and isinstance(minus, sympy.Pow) and \
                plus.exp == minus.exp and plus.exp.is_positive and minus.base.is_nonnegative:
            return _sign_proved(plus.base - minus.base, strict)
    return False


def _narrower_proof(formula: NamedFormula, original: sympy.Basic, mutant: sympy.Basic) -> str:
    """A symbolic reason the mutant hypothesis implies the original, or "": both conjunctions of
    inequalities g >= 0, and each of the original's g_o follows from one of the mutant's g_m
    through g_o - g_m >= 0 on the whole domain (sizes 1 + t with t >= 0, unit scalars
    1/(1 + t) with t > 0, other scalars positive; a definition such as delta's is a positive
    value, so ignoring it only asks more)."""
    if any(not isinstance(v, sympy.Symbol) for v in formula.locals().values()):
        return ""
    steps = _conditions_follow(original, mutant, _domain_subs(formula, sizes=True))
    return "" if steps is None else \
        "the mutant hypothesis implies the original: " + "; ".join(steps or ["(the same)"])


def _conditions_follow(original: sympy.Basic, mutant: sympy.Basic, subs: dict) -> list | None:
    """The steps by which each condition of ``original`` follows from one of ``mutant``'s (a
    gap g_o - g_m that sympy shows >= 0, > 0 where only the original is strict, on the domain
    ``subs``), or None where one does not."""
    conds_o, conds_m = _conditions(original), _conditions(mutant)
    if not conds_o or not conds_m:
        return None
    steps = []
    try:
        for g_o, strict_o, c_o in conds_o:
            for g_m, strict_m, c_m in conds_m:
                gap = g_o - g_m
                if sympy.count_ops(gap) > PROOF_OPS:
                    continue
                strict = strict_o and not strict_m
                if _sign_proved(gap.xreplace(subs), strict):
                    if c_m != c_o:
                        steps.append(f"{formula_str(c_m)} gives {formula_str(c_o)}, the gap "
                                     f"being {formula_str(sympy.simplify(gap))} "
                                     f"{'>' if strict else '>='} 0")
                    break
            else:
                return None
    except Exception:  # noqa: BLE001 - the proof is an attempt; the sampling decided
        return None
    return steps


def _definition_proof(name: str, mutant: sympy.Expr, domain: Domain) -> str:
    """A symbolic reason the claim with the mutant definition of ``name`` is implied, or "":
    with each definition substituted, every hypothesis of the mutant claim gives the original's
    (``_conditions_follow``) and every bound that uses ``name`` is at least as loose (the
    difference has the weaker side's sign), on the domain as ``_symbol_subs`` states it.  For a
    larger delta in xi >= 2 (4 delta)^{2L}, whose narrowing (a factor 9/8 in xi for 8 -> 9)
    the draws rarely meet."""
    local = {s.name: s.sympy() for s in domain.symbols}
    sym = local.get(name)
    rest = {local[n]: e for n, e in domain.definitions if n != name}
    if sym is None or not domain.hypotheses or any(e.has(sym) for e in rest.values()):
        return ""
    original = dict(domain.definitions)[name]
    subs = _symbol_subs(domain.symbols, sizes=True)
    put = lambda e, v: e.xreplace({sym: v}).xreplace(rest)  # noqa: E731
    hyp = sympy.And(*domain.hypotheses)
    steps = _conditions_follow(put(hyp, original), put(hyp, mutant), subs)
    if steps is None:
        return ""
    looser = []
    try:
        for bname, expr, weaker in domain.bounds:
            if not expr.has(sym):
                continue
            diff = put(expr, mutant) - put(expr, original)
            if sympy.count_ops(diff) > PROOF_OPS or \
                    not _sign_proved(diff.xreplace(subs) * (1 if weaker == "larger" else -1),
                                     False):
                return ""
            looser.append(bname)
    except Exception:  # noqa: BLE001 - the proof is an attempt; the sampling decided
        return ""
    return (f"with {name} := {formula_str(mutant)} for {formula_str(original)}, "
            f"{'; '.join(steps) or 'the hypotheses are the same'}"
            + (f", and {', '.join(looser)} {'is' if len(looser) == 1 else 'are'} at least as "
               f"loose" if looser else "")
            + " (sizes >= 1, scalars positive, unit ones in (0, 1))")


def _domain_words(formula: NamedFormula) -> str:
    unit = [s.name for s in formula.symbols if s.unit]
    out = "scalars positive"
    if unit:
        out += f", {', '.join(unit)} in (0, 1)"
    if any(s.name in SIZE_NAMES for s in formula.symbols):
        out += ", sizes positive integers"
    return out


def _implied_proof(formula: NamedFormula, original: sympy.Expr, mutant: sympy.Expr) -> str:
    """A symbolic reason the mutant is on the weaker side on the whole domain, or "": sympy
    decides the sign of (mutant)/(original) - 1 or of (mutant) - (original) with every scalar
    positive (a unit scalar u written 1/(1 + t), t > 0)."""
    op = ">=" if formula.weaker == "larger" else "<="
    subs = _domain_subs(formula)
    o, m = original.xreplace(subs), mutant.xreplace(subs)
    text_ratio = f"({formula_str(mutant)})/({formula_str(original)})"
    text_diff = f"({formula_str(mutant)}) - ({formula_str(original)})"
    try:
        if sympy.count_ops(m - o) > PROOF_OPS:
            return ""
        if o.is_positive or o.is_negative:
            ratio = sympy.simplify(m / o)
            above = (ratio - 1).is_nonnegative if o.is_positive else (ratio - 1).is_nonpositive
            below = (ratio - 1).is_nonpositive if o.is_positive else (ratio - 1).is_nonnegative
            if (above if formula.weaker == "larger" else below):
                cmp = ">=" if (ratio - 1).is_nonnegative else "<="
                sign = "positive" if o.is_positive else "negative"
                return (f"{text_ratio} = {_unsub(ratio, subs)} {cmp} 1 (the original is "
                        f"{sign})")
        diff = sympy.simplify(m - o)
        ok = diff.is_nonnegative if formula.weaker == "larger" else diff.is_nonpositive
        if ok:
            return f"{text_diff} = {_unsub(diff, subs)} {op} 0"
    except Exception:  # noqa: BLE001 - the proof is an attempt; the sampling decided
        return ""
    return ""


def _domain_subs(formula: NamedFormula, sizes: bool = False) -> dict:
    """The domain as sympy assumptions: a unit scalar u -> 1/(1 + t), t > 0, other scalars
    positive, and (``sizes``) a size -> 1 + t, t >= 0 (left as declared otherwise)."""
    return _symbol_subs(formula.symbols, sizes)


def _symbol_subs(symbols, sizes: bool = False) -> dict:
    """``_domain_subs`` for FormulaSymbols (keys their own sympy symbols); matrices skipped."""
    subs = {}
    for s in symbols:
        if s.kind != "scalar":
            continue
        sym = s.sympy()
        if s.name in SIZE_NAMES:
            if sizes:
                subs[sym] = 1 + sympy.Symbol(f"_t_{s.name}", nonnegative=True)
        elif s.unit:
            subs[sym] = 1 / (1 + sympy.Symbol(f"_t_{s.name}", positive=True))
        else:
            subs[sym] = sympy.Symbol(s.name, positive=True)
    return subs


def _unsub(expr: sympy.Basic, subs: dict) -> str:
    """Text of ``expr`` in the formula's own symbols (a unit scalar's 1/(1 + t) undone)."""
    back = {}
    for sym, new in subs.items():
        if isinstance(new, sympy.Symbol):
            back[new] = sympy.Symbol(sym.name)
        else:  # 1/(1 + t): t = 1/u - 1
            (t,) = new.free_symbols
            back[t] = 1 / sympy.Symbol(sym.name) - 1
    text = formula_str(expr.xreplace(back)) if back else formula_str(expr)
    return text if len(text) <= 80 else text[:77] + "..."
