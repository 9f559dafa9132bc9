"""Named formulas: the closed forms a paper asserts, as sympy expressions a user may override.

A formula is kept as text in the paper's notation (scalars and matrix symbols with symbolic
shapes, e.g. ``-U*Inverse((n+1)/n*Lambda + trace(Lambda)/n*Identity(d))*U.T``).  ``parse`` reads
text against the formula's declared symbols only, as data (``formula_parser``: a whitelist over
Python's ``ast``, never ``eval``/``sympify``), and checks its type: a scalar formula must be a
scalar, a matrix formula must have the declared shape, a hypothesis must be a condition.
``formula_str`` prints an expression so that ``parse`` reads it back.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

import sympy
from sympy.matrices.expressions.matexpr import MatrixElement, MatrixExpr
from sympy.printing.str import StrPrinter

from .errors import UsageError
from .formula_parser import FUNCTIONS, Parsed, read, same_dim, show

SIZE_NAMES = ("n", "d", "k", "L", "m", "N", "K", "H", "C")


def size_symbol(name: str) -> sympy.Symbol:
    return sympy.Symbol(name, positive=True, integer=True)


@dataclass(frozen=True)
class FormulaSymbol:
    """A symbol a formula may use: a scalar, or a matrix with a shape over size names."""

    name: str
    kind: str = "scalar"  # scalar | matrix
    shape: tuple[str, str] | None = None
    description: str = ""
    positive: bool = False
    symmetric: bool = False  # a matrix the claim assumes symmetric (A_i in ahn2023 eq. (9))
    # a probability or a fraction: the claim only speaks of values in (0, 1) (delta in yang2024
    # Thm. 2); implies positive.  The implication test of ``mutate`` draws it there.
    unit: bool = False
    # the claim only speaks of values at most this other scalar's (lambda_j <= lambda_1, the
    # largest eigenvalue, in gatmiry2024's moment lemmas); ``mutate`` draws it there
    at_most: str | None = None
    # the claim's hypotheses confine it near [lo, hi] (an eigenvalue of gatmiry2024 Thm. 4.5's
    # window [zeta, 2 - zeta]); ``mutate`` draws half its values log-uniform there
    near: tuple[float, float] | None = None
    # the claim takes this symbol equal to an expression in the others (yang2024 Lemma 5: a
    # prompt token's feature z_k = Z e_k); ``mutate`` compares mutants under it as an assumption
    equals: str | None = None

    def __post_init__(self):
        if self.unit and (self.kind != "scalar" or self.name in SIZE_NAMES):
            raise ValueError(f"symbol {self.name}: unit applies to a scalar that is not a size")
        if self.at_most is not None and (self.kind != "scalar" or self.name in SIZE_NAMES
                                         or self.at_most == self.name):
            raise ValueError(f"symbol {self.name}: at_most applies to a scalar that is not a "
                             f"size, bounded by another scalar")
        if self.near is not None and (self.kind != "scalar" or self.name in SIZE_NAMES
                                      or not 0 < self.near[0] < self.near[1]):
            raise ValueError(f"symbol {self.name}: near applies to a scalar that is not a size, "
                             f"with 0 < lo < hi")

    def sympy(self) -> sympy.Basic:
        if self.kind == "matrix":
            rows, cols = (_dim(s) for s in self.shape)
            return sympy.MatrixSymbol(self.name, rows, cols)
        if self.name in SIZE_NAMES:
            return size_symbol(self.name)
        if self.positive or self.unit:
            return sympy.Symbol(self.name, positive=True)
        return sympy.Symbol(self.name)

    def as_dict(self) -> dict:
        out = {"name": self.name, "kind": self.kind, "description": self.description}
        if self.shape is not None:
            out["shape"] = list(self.shape)
        if self.symmetric:
            out["symmetric"] = True
        if self.unit:
            out["unit"] = True
        if self.at_most is not None:
            out["at_most"] = self.at_most
        if self.near is not None:
            out["near"] = list(self.near)
        if self.equals is not None:
            out["equals"] = self.equals
        return out


def _dim(s: str):
    """A shape entry: an integer, a size name, or an expression in size names (``d+1``)."""
    if s.isdigit():
        return int(s)
    if s.isidentifier():
        return size_symbol(s)
    names = set(re.findall(r"[A-Za-z_]\w*", s)) - set(FUNCTIONS)
    return parse_in(s, {n: size_symbol(n) for n in names}, what=f"shape entry {s!r}",
                    expect="value")


def shape_value(s: str, sizes: Mapping[str, int]) -> int:
    """A shape entry (``d+1``) at concrete sizes."""
    v = as_sympy(_dim(s)).xreplace({size_symbol(k): sympy.Integer(v) for k, v in sizes.items()})
    if not v.is_Integer:
        raise UsageError(f"shape entry {s!r} needs sizes it was not given ({sorted(sizes)})")
    return int(v)


WEAKER = ("larger", "smaller", "narrower")


@dataclass(frozen=True)
class NamedFormula:
    """A closed form the paper asserts (``equation`` says where), in its declared symbols.

    ``weaker`` says which way the formula is a bound: ``"larger"`` when the claim stays true, and
    becomes weaker, if the formula's value is replaced by a larger one (an upper bound, a
    sufficient threshold such as a least step count or a least admissible gamma); ``"smaller"``
    for the opposite (a lower bound); ``"narrower"`` for a hypothesis (a condition): the claim
    stays true under any condition that holds on part of where it holds (a larger threshold in
    n >= 4 k^2 d^2).  ``None`` (the default): the formula is asserted exactly.
    ``icl-verify mutate`` uses it to recognise a mutant that is a true consequence of the claim
    (a looser bound), which no sound check can refute.

    ``scale_free`` (a reason, or "") says the claim is the same statement when the formula is
    multiplied by any positive constant, and why (a hypothesis Sigma = I where the loss obeys
    f(A; c Sigma) = c f(c A; Sigma)): ``mutate`` then counts a positive multiple of the formula
    as equivalent, citing the reason.

    ``sign_free`` (a reason, or "") says the same for the negated formula (a vector the claim
    only uses through its norm, yang2024 Lemma 5's delta_k in ||Zbar delta_k||^2).

    ``proof`` (for a bound marked ``weaker``) returns the bound the paper's proof gives, as the
    claim's checks derive it (a sympy expression in symbols named like the formula's): a mutant
    on the weaker side of it everywhere is proved by the paper's argument although it may be
    tighter than the printed bound, so ``mutate`` counts it as implied.  ``proof_source`` names
    the argument when it is not the paper's (gatmiry2024 Lemma 4.2's alpha^(j) >= lambda_j^k,
    from the non-negative coefficients of the Wishart moments).

    ``sharp`` (for a bound marked ``weaker``) returns the least bound that holds, as the claim's
    checks derive it (yang2024 Lemma 2's C = 1): a mutant on its weaker side is a true statement,
    implied like one the paper's proof gives; a mutant beyond it is false and must be refuted.

    ``exponents`` names the symbols a matrix power's exponent may contain, for checks that expand
    powers for each value of those symbols (a loss in the loop count L): an exponent in another
    symbol (the sample size n) is rejected like an ill-typed text, by ``--set`` and ``mutate``."""

    name: str
    text: str
    symbols: tuple[FormulaSymbol, ...]
    description: str = ""
    equation: str = ""
    shape: tuple[str, str] | None = None  # None: a scalar formula
    weaker: str | None = None  # "larger" | "smaller" | None: see the class docstring
    scale_free: str = ""  # why a positive multiple is the same statement, or "": see above
    sign_free: str = ""  # why the negated formula is the same statement, or "": see above
    exponents: tuple[str, ...] | None = None  # symbols a matrix power's exponent may use (None: any)
    proof: Callable[[], sympy.Expr] | None = field(default=None, compare=False, repr=False)
    proof_source: str = "the paper's proof"  # whose argument ``proof`` is, for mutate's reasons
    sharp: Callable[[], sympy.Expr] | None = field(default=None, compare=False, repr=False)
    _cache: dict = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self):
        if self.weaker is not None and self.weaker not in WEAKER:
            raise ValueError(f"formula {self.name}: weaker must be one of {', '.join(WEAKER)} or "
                             f"None, not {self.weaker!r}")
        if self.weaker is not None and self.shape is not None:
            raise ValueError(f"formula {self.name}: weaker applies to a scalar formula, not to a "
                             f"{self.shape[0]}x{self.shape[1]} matrix")

    def locals(self) -> dict[str, Any]:
        out = {s.name: s.sympy() for s in self.symbols}
        for size in SIZE_NAMES:
            if size in out and not isinstance(out[size], sympy.Symbol):
                raise ValueError(f"{size} is a size name and cannot be a matrix")
        return out

    @property
    def expects(self) -> str:
        """What a text for this formula must be: what the paper's text is, a condition (a
        hypothesis such as n >= 4 k^2 d^2) or a value (a scalar or a matrix)."""
        paper = self._cache.get(self.text)
        if paper is None:
            paper = read(self.text, self.locals(), what=f"formula {self.name}", expect="any")
        return "condition" if paper.kind == "condition" else "value"

    def parse(self, text: str | None = None, strict: bool = False) -> sympy.Basic:
        """Read ``text`` (default: the paper's) in this formula's symbols, type-checked.

        The text is data: ``formula_parser.read`` walks its syntax tree with a whitelist and
        never evaluates it.  Any text other than the paper's (``--set``, a correction, a mutant)
        and ``strict`` also reject a text whose shapes do not agree on the tree (a sum of a d x 1
        and a 1 x d matrix); the paper's own text is read leniently, so that an ill-typed
        printed formula is left to the claim's checks, which report it (yang2024 eq. (33))."""
        text = self.text if text is None else text
        parsed = self._cache.get(text)
        fresh = parsed is None
        if fresh:
            parsed = read(text, self.locals(), what=f"formula {self.name}",
                          expect="any" if text == self.text else self.expects)
        if (strict or text != self.text) and parsed.shape_error:
            raise UsageError(f"formula {self.name}: {show(text)} is ill-typed: "
                             f"{parsed.shape_error}")
        if fresh:
            self._check_type(parsed, text)
            self._cache[text] = parsed
        return parsed.expr

    def _check_type(self, parsed: Parsed, text: str) -> None:
        expr = parsed.expr
        if text.strip() in ("True", "False"):  # a relation that folds to one is still read
            raise UsageError(f"formula {self.name}: {show(text)} is a constant truth value, not "
                             f"a condition on the symbols")
        if text != self.text and expr.has(sympy.zoo, sympy.nan, sympy.oo, -sympy.oo):
            raise UsageError(f"formula {self.name}: {show(text)} is not finite (it contains "
                             f"{'nan' if expr.has(sympy.nan) else 'an infinity'})")
        if text != self.text and parsed.kind != "matrix" and isinstance(expr, sympy.Expr) \
                and _reals_of_matrices(expr).is_extended_real is False:
            # as 'I' in the text: not a real number at any value of its symbols' domain
            raise UsageError(f"formula {self.name}: {show(text)} is not a real number for any "
                             f"value of its symbols ({_short(expr)}): formulas are real")
        if self.exponents is not None:
            for p in expr.atoms(sympy.MatPow):
                bad = sorted(str(x) for x in p.exp.free_symbols if str(x) not in self.exponents)
                if bad:
                    raise UsageError(f"formula {self.name}: {show(text)} raises a matrix to the "
                                     f"power {p.exp}; exponents here may only use "
                                     f"{', '.join(self.exponents)} (the checks expand each power), "
                                     f"not {', '.join(bad)}")
        if self.shape is None and parsed.kind == "matrix" and not all(
                same_dim(x, 1) for x in parsed.shape):  # a 1 x 1 matrix is a scalar
            raise UsageError(f"formula {self.name} is a scalar, but {show(text)} is a matrix")
        if self.shape is not None:
            if parsed.kind != "matrix":
                if expr == 0:
                    return
                raise UsageError(f"formula {self.name} is a {self.shape[0]}x{self.shape[1]} matrix, "
                                 f"but {show(text)} is a scalar")
            want = tuple(_dim(s) for s in self.shape)
            got = parsed.shape
            if not all(same_dim(a, b) for a, b in zip(got, want)):
                raise UsageError(f"formula {self.name} must be {self.shape[0]}x{self.shape[1]}, "
                                 f"but {show(text)} has shape {got[0]}x{got[1]}")

    def as_dict(self) -> dict:
        return {
            "name": self.name,
            "expression": self.text,
            "equation": self.equation,
            "description": self.description,
            "shape": list(self.shape) if self.shape else None,
            "weaker": self.weaker,
            **({"scale_free": self.scale_free} if self.scale_free else {}),
            **({"sign_free": self.sign_free} if self.sign_free else {}),
            "symbols": [s.as_dict() for s in self.symbols],
        }


def _reals_of_matrices(expr: sympy.Expr) -> sympy.Expr:
    """``expr`` with every trace, determinant and entry of a matrix replaced by a real symbol:
    the matrices of the papers are real, which sympy does not assume of a ``MatrixSymbol``, so
    that ``sqrt(-1 - Trace(A)**2)`` is seen to be non-real."""
    nodes = [n for n in sympy.preorder_traversal(expr)
             if isinstance(n, (sympy.Trace, sympy.Determinant, MatrixElement))]
    return expr.xreplace({n: sympy.Dummy(real=True) for n in nodes}) if nodes else expr


def _same_dim(a, b) -> bool:
    return same_dim(a, b)


def _shape_str(m) -> str:
    return f"{m.shape[0]}x{m.shape[1]}"


def shape_error(expr: sympy.Basic) -> str:
    """The first shape mismatch in a matrix expression, or "" (sympy builds ``X*X`` for a d x n
    ``X``, or ``w - w.T``, without complaint; a formula must be well-typed for every size)."""
    for node in sympy.preorder_traversal(expr):
        if not isinstance(node, MatrixExpr) and not isinstance(node, (sympy.Trace,
                                                                      sympy.Determinant)):
            continue
        mats = [a for a in node.args if isinstance(a, MatrixExpr)]
        if isinstance(node, (sympy.MatAdd, sympy.HadamardProduct)):
            for a in mats[1:]:
                if not all(_same_dim(x, y) for x, y in zip(a.shape, mats[0].shape)):
                    return (f"{formula_str(mats[0])} ({_shape_str(mats[0])}) and {formula_str(a)} "
                            f"({_shape_str(a)}) are added")
        elif isinstance(node, sympy.MatMul):
            for a, b in zip(mats, mats[1:]):
                if not _same_dim(a.shape[1], b.shape[0]):
                    return (f"{formula_str(a)} ({_shape_str(a)}) times {formula_str(b)} "
                            f"({_shape_str(b)})")
        elif isinstance(node, (sympy.MatPow, sympy.Inverse, sympy.Trace, sympy.Determinant)):
            base = node.args[0]
            if isinstance(base, MatrixExpr) and not _same_dim(*base.shape):
                what = {sympy.Trace: "trace of", sympy.Determinant: "determinant of"}.get(
                    type(node), "power of")
                return f"{what} the non-square {formula_str(base)} ({_shape_str(base)})"
    return ""


def _free(expr: sympy.Basic) -> set:
    """Symbols and matrix symbols the expression uses (not counting matrix shapes)."""
    out, stack = set(), [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, (sympy.MatrixSymbol, sympy.Symbol)):
            out.add(node)
            continue
        stack.extend(a for a in node.args if isinstance(a, sympy.Basic))
    return out


def parse_in(text: str, local: Mapping[str, Any], what: str = "expression",
             expect: str = "any") -> sympy.Basic:
    """Formula text read as data with ``local`` as its only names (``formula_parser.read``):
    one-line UsageErrors for anything else, ill-typed shapes included."""
    parsed = read(text, local, what=what, expect=expect)
    if parsed.shape_error:
        raise UsageError(f"{what}: {show(text)} is ill-typed: {parsed.shape_error}")
    return parsed.expr


class FormulaPrinter(StrPrinter):
    """``str`` for formulas that ``NamedFormula.parse`` reads back (``Identity(d)``, not ``I``)."""

    def _print_Identity(self, expr):
        return f"Identity({self._print(expr.rows)})"

    def _print_ZeroMatrix(self, expr):
        return f"ZeroMatrix({self._print(expr.rows)}, {self._print(expr.cols)})"

    def _print_OneMatrix(self, expr):
        return f"OneMatrix({self._print(expr.rows)}, {self._print(expr.cols)})"

    def _print_Inverse(self, expr):
        return f"Inverse({self._print(expr.arg)})"

    def _print_Trace(self, expr):
        return f"trace({self._print(expr.arg)})"

    def _print_Transpose(self, expr):
        return f"Transpose({self._print(expr.arg)})"

    def _print_BlockMatrix(self, expr):  # not the Matrix([...]) of an explicit matrix
        rows = ", ".join("[" + ", ".join(self._print(b) for b in row) + "]"
                         for row in expr.blocks.tolist())
        return f"BlockMatrix([{rows}])"


def formula_str(expr: sympy.Basic) -> str:
    return FormulaPrinter().doprint(expr)


def formula_value(expr: sympy.Basic, values: Mapping[str, Any]) -> Any:
    """Exact value of a formula: matrix symbols -> sympy matrices, scalars -> numbers/symbols.

    Values are looked up by symbol name; a matrix result is returned explicit (``Matrix``).
    """
    subs = {}
    for sym in list(expr.atoms(sympy.MatrixSymbol)) + list(expr.free_symbols):
        name = sym.name if hasattr(sym, "name") else str(sym)
        if name in values:
            value = values[name]
            if isinstance(sym, sympy.MatrixSymbol):
                value = sympy.ImmutableMatrix(value)
            subs[sym] = value
    out = expr.xreplace(subs) if subs else expr
    if isinstance(out, MatrixExpr):
        try:  # bottom-up with explicit matrices: as_explicit() sums entries symbolically (slow)
            return sympy.ImmutableMatrix(_explicit(out))
        except Exception:  # noqa: BLE001 - symbolic shapes or an unknown node: sympy's own way
            pass
        out = out.doit()
        if isinstance(out, MatrixExpr):
            out = out.as_explicit()
    elif isinstance(out, sympy.Basic):
        if out.has(MatrixExpr):  # a scalar of matrices (traces): bottom-up as well
            try:
                return _explicit_scalar(out)
            except Exception:  # noqa: BLE001 - fall back to sympy's way
                pass
        out = out.doit()
    return out


def sum_terms(body: sympy.Basic, limits: list) -> list:
    """The terms of a finite sum over concrete integer limits (sympy lists the innermost sum
    first, so the outermost index is fixed first: an inner limit may depend on it)."""
    if not limits:
        return [body]
    (idx, lo, hi), rest = limits[-1], limits[:-1]
    lo, hi = as_sympy(lo), as_sympy(hi)
    if not (lo.is_Integer and hi.is_Integer):
        raise ValueError(f"a sum over {idx} needs concrete limits, got {lo}..{hi}")
    out = []
    for v in range(int(lo), int(hi) + 1):
        value = sympy.Integer(v)
        out += sum_terms(body.xreplace({idx: value}), [
            (i, as_sympy(l).xreplace({idx: value}), as_sympy(h).xreplace({idx: value}))
            for i, l, h in rest])
    return out


def as_sympy(x) -> sympy.Basic:
    """A computed value (a sympy object, or a Python/numpy number) as a sympy object, never
    by parsing text: ``sympify`` would evaluate a string."""
    import fractions
    import numbers

    if isinstance(x, sympy.Basic):
        return x
    if isinstance(x, bool):
        return sympy.true if x else sympy.false
    if isinstance(x, numbers.Integral):
        return sympy.Integer(int(x))
    if isinstance(x, fractions.Fraction):
        return sympy.Rational(x.numerator, x.denominator)
    if isinstance(x, numbers.Real):
        return sympy.Float(float(x))
    if isinstance(x, numbers.Complex):
        return sympy.Float(x.real) + sympy.I * sympy.Float(x.imag)
    import mpmath

    if isinstance(x, mpmath.mpf):
        return sympy.Float(x)
    raise TypeError(f"not a number or a sympy object: {type(x).__name__}")


def _explicit(node: sympy.Basic) -> sympy.MatrixBase:
    """An explicit Matrix for a matrix expression whose symbols are all replaced by values."""
    from sympy.matrices.expressions.special import Identity, OneMatrix, ZeroMatrix

    if isinstance(node, sympy.MatrixBase):
        return sympy.Matrix(node)
    if isinstance(node, (Identity, ZeroMatrix, OneMatrix)):
        rows, cols = int(node.rows), int(node.cols)
        return {Identity: sympy.eye, ZeroMatrix: sympy.zeros, OneMatrix: sympy.ones}[
            type(node)](*((rows,) if isinstance(node, Identity) else (rows, cols)))
    if isinstance(node, sympy.MatMul):
        coeff, out = sympy.Integer(1), None
        for a in node.args:
            if isinstance(a, (MatrixExpr, sympy.MatrixBase)):
                m = _explicit(a)
                out = m if out is None else out * m
            else:
                coeff *= a.doit()
        return out * coeff
    if isinstance(node, sympy.MatAdd):
        terms = [_explicit(a) for a in node.args]
        return sum(terms[1:], terms[0])
    if isinstance(node, sympy.Transpose):
        return _explicit(node.arg).T
    if isinstance(node, sympy.Inverse):
        return _explicit(node.arg).inv()
    if isinstance(node, sympy.MatPow):
        return _explicit(node.base) ** node.exp
    if isinstance(node, sympy.Sum):
        return _explicit_sum(node, _explicit)
    raise TypeError(f"no explicit rule for {type(node).__name__}")


def _explicit_sum(node: sympy.Sum, explicit) -> sympy.Basic:
    """A sum with concrete limits, term by term (``explicit`` evaluates a term); an empty
    range is the zero of the summand's shape."""
    terms = [explicit(t) for t in sum_terms(node.function, list(node.limits))]
    if not terms:
        shape = getattr(node.function, "shape", None)
        return sympy.zeros(*(int(x) for x in shape)) if shape else sympy.Integer(0)
    return sum(terms[1:], terms[0])


def _explicit_scalar(node: sympy.Basic) -> sympy.Basic:
    """A scalar expression whose traces/determinants of substituted matrices are evaluated."""
    if isinstance(node, sympy.Trace):
        return _explicit(node.arg).trace()
    if isinstance(node, sympy.Determinant):
        return _explicit(node.arg).det()
    if isinstance(node, sympy.Sum) and node.function.has(MatrixExpr):
        return _explicit_sum(node, _explicit if isinstance(node.function, MatrixExpr)
                             else _explicit_scalar)
    if isinstance(node, MatrixExpr):
        raise TypeError("a matrix inside a scalar expression")
    if not node.args or not node.has(MatrixExpr):
        return node
    return node.func(*[_explicit_scalar(a) for a in node.args])


def compile_formula(expr: sympy.Basic, sizes: Mapping[str, int]):
    """A float64 numpy function of a formula at concrete sizes: ``f(**values) -> ndarray``.

    Sizes (``n``, ``d``, ...) are substituted first so that shapes are concrete; the remaining
    matrix and scalar symbols become keyword arguments.
    """
    import numpy as np

    e = expr.subs({size_symbol(k): v for k, v in sizes.items()})
    if isinstance(e, MatrixExpr):
        # a size set to 1 leaves a unit coefficient, MatMul(1, X, ...), which numpy's printer
        # writes as (1).dot(X); doit() drops it
        e = e.doit()
    args = sorted(_free(e), key=lambda s: s.name)
    fn = sympy.lambdify(args, e, "numpy")
    names = [s.name for s in args]

    def call(**values):
        return np.asarray(fn(*[values[k] for k in names]), dtype=float)

    call.arg_names = names
    return call


def _short(expr, limit: int = 60) -> str:
    """An expression as sympy reads it, cut to ``limit`` characters."""
    text = str(expr)
    return text if len(text) <= limit else text[:limit - 3] + "..."
