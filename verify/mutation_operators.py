"""Mutants of a named formula, generated from its sympy expression tree: the mutation
neighbourhood (``generate``) and the wider one a correction searches (``CORRECTION_OPERATORS``).

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

``CORRECTION_OPERATORS`` adds ``factors`` (a factor dropped, a matrix symbol multiplied on) and
``signs`` (several terms of one sum negated), which ``verify/corrections.py`` asks for.  Whether
a mutant says the same as the original is ``verify.equivalence``'s to judge.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Iterator

import sympy
from sympy.matrices.expressions.special import Identity, OneMatrix, ZeroMatrix

from .domain import _is_matrix, _one_line
from .errors import UsageError
from .formulas import NamedFormula, formula_str

OPERATORS = ("constant", "swap", "drop_term", "sign", "transpose")

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
