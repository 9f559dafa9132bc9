"""Matrix expressions in index form: the input language of the moment kernel.

A :class:`Mat` is a sum of terms; a term is ``coeff * (product of letter entries)`` written as a
small tensor network: every letter occurrence is an *atom* whose slots carry index *nodes*, and a
node shared by two slots is summed over.  A term also records its free row and column node (``None``
for the trivial space ``'1'``).  Matrix products join the right operand's row node with the left
operand's column node; nothing is expanded into entries, so sizes stay symbolic.

The same ``@``, ``+``, ``*``, ``.T`` / ``.mT`` protocol that numpy, torch and sympy matrices obey is
implemented here, so a forward pass written once (``models/``) runs on symbolic expressions too.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Iterable, Mapping, NamedTuple

import sympy

from .letters import ONE, GaussianMatrixLaw, GaussianVectorLaw, Letter

Atom = tuple  # (letter name, (node,)) for a vector, (letter name, (row node, col node)) for a matrix


class Term(NamedTuple):
    """One product: ``coeff`` times the atoms, with node spaces ``ntypes`` and free nodes."""

    coeff: sympy.Expr
    atoms: tuple
    ntypes: tuple
    row: int | None
    col: int | None


def _relabel(term: Term, mapping: list[int], ntypes: tuple) -> Term:
    atoms = tuple((name, tuple(mapping[k] for k in nodes)) for name, nodes in term.atoms)
    row = None if term.row is None else mapping[term.row]
    col = None if term.col is None else mapping[term.col]
    return Term(term.coeff, atoms, ntypes, row, col)


def _compact(coeff, atoms, ntypes, row, col, merge: tuple[int, int] | None = None) -> Term:
    """Merge node ``merge[1]`` into ``merge[0]`` (if given) and renumber nodes 0..k-1."""
    n_nodes = len(ntypes)
    target = list(range(n_nodes))
    if merge is not None:
        keep, drop = merge
        if ntypes[keep] != ntypes[drop]:
            raise ValueError(f"cannot contract a {ntypes[keep]!r} index with a {ntypes[drop]!r} index")
        target[drop] = keep
    used = sorted(set(target))
    renum = {old: new for new, old in enumerate(used)}
    mapping = [renum[target[k]] for k in range(n_nodes)]
    new_types = tuple(ntypes[old] for old in used)
    return _relabel(Term(coeff, atoms, ntypes, row, col), mapping, new_types)


def _shift(term: Term, offset: int) -> Term:
    mapping = [k + offset for k in range(len(term.ntypes))]
    return _relabel(term, mapping, term.ntypes)


def _merge_letters(a: Mapping[str, Letter], b: Mapping[str, Letter]) -> dict[str, Letter]:
    out = dict(a)
    for name, letter in b.items():
        if name in out and out[name] != letter:
            raise ValueError(f"letter {name!r} is used with two different meanings")
        out[name] = letter
    return out


def _as_scalar(value) -> sympy.Expr | None:
    if isinstance(value, Mat):
        return None
    try:
        return sympy.sympify(value)
    except (sympy.SympifyError, TypeError):
        return None


@dataclass(frozen=True, eq=False)
class Mat:
    """A symbolic matrix ``rows x cols`` over index spaces, as a sum of index-form terms."""

    rows: str
    cols: str
    terms: tuple
    letters: Mapping[str, Letter]

    # ----- construction -----
    @staticmethod
    def letter(letter: Letter) -> "Mat":
        letters = {letter.name: letter}
        law = letter.law
        for dep in _law_letters(law):
            letters = _merge_letters(letters, {dep.name: dep})
        if letter.is_vector:
            term = Term(sympy.Integer(1), ((letter.name, (0,)),), (letter.rows,), 0, None)
        else:
            term = Term(sympy.Integer(1), ((letter.name, (0, 1)),), (letter.rows, letter.cols), 0, 1)
        return Mat(letter.rows, letter.cols, (term,), letters)

    @staticmethod
    def identity(space: str) -> "Mat":
        return Mat(space, space, (Term(sympy.Integer(1), (), (space,), 0, 0),), {})

    @staticmethod
    def zeros(rows: str, cols: str = ONE) -> "Mat":
        return Mat(rows, cols, (), {})

    @staticmethod
    def scalar(value) -> "Mat":
        coeff = sympy.sympify(value)
        if coeff == 0:
            return Mat.zeros(ONE, ONE)
        return Mat(ONE, ONE, (Term(coeff, (), (), None, None),), {})

    # ----- shape -----
    @property
    def shape(self) -> tuple[str, str]:
        return (self.rows, self.cols)

    @property
    def is_zero(self) -> bool:
        return not self.terms

    # ----- algebra -----
    def __add__(self, other) -> "Mat":
        other = _coerce(other, self)
        if other.shape != self.shape:
            raise ValueError(f"cannot add {self.shape} and {other.shape}")
        return Mat(self.rows, self.cols, self.terms + other.terms,
                   _merge_letters(self.letters, other.letters))

    __radd__ = __add__

    def __neg__(self) -> "Mat":
        return self.scale(-1)

    def __sub__(self, other) -> "Mat":
        return self + (-_coerce(other, self))

    def __rsub__(self, other) -> "Mat":
        return _coerce(other, self) - self

    def scale(self, factor) -> "Mat":
        factor = sympy.sympify(factor)
        if factor == 0:
            return Mat.zeros(self.rows, self.cols)
        terms = tuple(t._replace(coeff=t.coeff * factor) for t in self.terms)
        return Mat(self.rows, self.cols, terms, self.letters)

    def __mul__(self, other) -> "Mat":
        scalar = _as_scalar(other)
        if scalar is not None:
            return self.scale(scalar)
        if isinstance(other, Mat):
            if other.shape == (ONE, ONE):
                return self._product(other, "scalar", self.rows, self.cols)
            if self.shape == (ONE, ONE):
                return other._product(self, "scalar", other.rows, other.cols)
            raise ValueError("use @ for matrix products; * multiplies by scalars or 1x1 matrices")
        return NotImplemented

    __rmul__ = __mul__

    def __truediv__(self, other) -> "Mat":
        scalar = _as_scalar(other)
        if scalar is None:
            return NotImplemented
        return self.scale(1 / scalar)

    def __matmul__(self, other) -> "Mat":
        if not isinstance(other, Mat):
            return NotImplemented
        if self.cols != other.rows:
            raise ValueError(f"shape mismatch in product: {self.shape} @ {other.shape}")
        mode = "contract" if self.cols != ONE else "outer"
        return self._product(other, mode, self.rows, other.cols)

    def _product(self, other: "Mat", mode: str, rows: str, cols: str) -> "Mat":
        """Pairwise products of terms; ``mode`` is contract (join indices), outer or scalar."""
        letters = _merge_letters(self.letters, other.letters)
        out = []
        for t1 in self.terms:
            for t2 in other.terms:
                off = len(t1.ntypes)
                s2 = _shift(t2, off)
                coeff = t1.coeff * t2.coeff
                if coeff == 0:
                    continue
                atoms = t1.atoms + s2.atoms
                ntypes = t1.ntypes + s2.ntypes
                if mode == "contract":
                    row, col = t1.row, s2.col
                    keep, drop = t1.col, s2.row
                    if col == drop:
                        col = keep
                    out.append(_compact(coeff, atoms, ntypes, row, col, (keep, drop)))
                elif mode == "scalar":
                    out.append(Term(coeff, atoms, ntypes, t1.row, t1.col))
                else:  # outer product: self's column space and other's row space are '1'
                    out.append(Term(coeff, atoms, ntypes, t1.row, s2.col))
        return Mat(rows, cols, tuple(out), letters)

    @property
    def T(self) -> "Mat":
        terms = tuple(t._replace(row=t.col, col=t.row) for t in self.terms)
        return Mat(self.cols, self.rows, terms, self.letters)

    mT = T

    def trace(self) -> "Mat":
        if self.rows != self.cols:
            raise ValueError(f"trace of a non-square {self.shape} matrix")
        if self.rows == ONE:
            return self
        out = []
        for t in self.terms:
            if t.row == t.col:
                out.append(Term(t.coeff, t.atoms, t.ntypes, None, None))
            else:
                out.append(_compact(t.coeff, t.atoms, t.ntypes, None, None, (t.row, t.col)))
        return Mat(ONE, ONE, tuple(out), self.letters)

    def map_coeffs(self, fn) -> "Mat":
        terms = tuple(t._replace(coeff=fn(t.coeff)) for t in self.terms)
        return Mat(self.rows, self.cols, tuple(t for t in terms if t.coeff != 0), self.letters)

    def random_letters(self) -> list[Letter]:
        return [l for l in self.letters.values() if l.is_random]

    def __repr__(self) -> str:
        return f"Mat({self.rows}x{self.cols}, {len(self.terms)} terms)"


def _law_letters(law) -> Iterable[Letter]:
    if isinstance(law, GaussianVectorLaw):
        return [l for l in (law.mean, law.cov) if l is not None]
    if isinstance(law, GaussianMatrixLaw):
        return [law.row_cov] if law.row_cov is not None else []
    return []


def _coerce(value, like: Mat) -> Mat:
    if isinstance(value, Mat):
        return value
    scalar = _as_scalar(value)
    if scalar is None:
        raise TypeError(f"cannot combine {type(value).__name__} with a symbolic matrix")
    if scalar == 0:
        return Mat.zeros(like.rows, like.cols)
    if like.shape == (ONE, ONE):
        return Mat.scalar(scalar)
    if like.rows == like.cols:
        return Mat.identity(like.rows).scale(scalar)
    raise ValueError(f"cannot add a scalar to a {like.shape} matrix")


# ----- public constructors -----
def matrix(name: str, rows: str = "d", cols: str = "d", symmetric: bool = False,
           latex: str | None = None) -> Mat:
    """A fixed matrix letter."""
    return Mat.letter(Letter(name, rows, cols, symmetric=symmetric, latex=latex))


def vector(name: str, space: str = "d", latex: str | None = None) -> Mat:
    """A fixed column-vector letter."""
    return Mat.letter(Letter(name, space, ONE, latex=latex))


def identity(space: str = "d") -> Mat:
    return Mat.identity(space)


def zeros(rows: str, cols: str = ONE) -> Mat:
    return Mat.zeros(rows, cols)


def scalar(value) -> Mat:
    """A 1 x 1 matrix holding a sympy scalar (a number or a parameter symbol)."""
    return Mat.scalar(value)


def gaussian_vector(name: str, space: str = "d", mean: Mat | None = None, cov: Mat | None = None,
                    latex: str | None = None) -> Mat:
    """A random vector ~ N(mean, cov); ``mean``/``cov`` are single-letter expressions or None."""
    law = GaussianVectorLaw(mean=_single_letter(mean), cov=_single_letter(cov))
    if law.cov is not None and not law.cov.symmetric:
        raise ValueError(f"covariance letter {law.cov.name} must be declared symmetric")
    return Mat.letter(Letter(name, space, ONE, law=law, latex=latex))


def gaussian_matrix(name: str, rows: str = "d", cols: str = "n", row_cov: Mat | None = None,
                    latex: str | None = None) -> Mat:
    """A random matrix with i.i.d. N(0, row_cov) columns (the data matrix X of n samples)."""
    law = GaussianMatrixLaw(row_cov=_single_letter(row_cov))
    if law.row_cov is not None and not law.row_cov.symmetric:
        raise ValueError(f"covariance letter {law.row_cov.name} must be declared symmetric")
    return Mat.letter(Letter(name, rows, cols, law=law, latex=latex))


def _single_letter(m: Mat | None) -> Letter | None:
    if m is None:
        return None
    if len(m.terms) != 1 or len(m.terms[0].atoms) != 1 or m.terms[0].coeff != 1:
        raise ValueError("a mean or covariance must be a single letter")
    return m.letters[m.terms[0].atoms[0][0]]
