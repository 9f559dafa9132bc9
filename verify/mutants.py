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
from typing import Any, Callable, Iterator

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
    from .implication import definition_implication, implication  # it imports this module
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
    from .implication import exact_truth  # it imports this module
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
    from .implication import definition_implication  # it imports this module
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
    from .implication import implication  # it imports this module
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
