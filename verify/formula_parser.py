"""Formula text as data: a whitelisting reader over Python's ``ast`` that never calls ``eval``
or ``sympify`` on the text.

A formula (from ``--set``, from a claim's declaration, from ``mutate``) is read in three steps:

1. bounds on the text itself: at most ``MAX_LENGTH`` characters, parsed by ``ast.parse`` (which
   only builds a tree), nested at most ``MAX_DEPTH`` deep (a chain ``a + b + c`` is one level);
2. a walk over the tree that accepts only number literals, the names the caller binds (a
   claim's declared symbols, or concrete values), ``pi`` and ``E``, the operators
   ``+ - * / **`` (not ``^``: Python binds it below ``+``), comparisons ``< <= > >=`` and ``& |``
   between them where a condition is expected, ``.T`` of a matrix, a subscript of a matrix by
   integer literals or ``:``, and the calls of ``FUNCTIONS`` with their arity checked; every
   other node (strings, attributes, keywords, lambdas, comprehensions, ...) is refused, naming
   the offending token;
3. types and sizes on the tree, before sympy evaluates anything: each node is a scalar, a
   matrix of a symbolic shape, or a condition; sums need equal shapes, products equal inner
   sizes, powers and inverses square matrices (``U*ZeroMatrix(n, d)`` for a d x d ``U`` is a
   shape error although sympy folds it to a zero matrix); constants are bounded (at most
   ``MAX_DIGITS`` digits, exponents and matrix sizes at most ``MAX_EXPONENT`` and ``MAX_DIM``)
   so that ``9**9**9`` is refused instead of evaluated.

Only then are sympy's constructors called, with the operators sympy itself would apply, so a
well-formed text gives the expression ``sympy.sympify`` would have given.  Every failure is a
``UsageError`` (one line); nothing else escapes.
"""
from __future__ import annotations

import ast
import math
from dataclasses import dataclass
from typing import Any, Callable, Mapping

import sympy
from sympy.matrices.expressions.matexpr import MatrixExpr

from .errors import UsageError

MAX_LENGTH = 10_000  # characters of formula text
MAX_DEPTH = 100  # nesting of the tree (a chain of + or * is one level)
MAX_DIGITS = 10_000  # decimal digits of any constant the text computes
MAX_EXPONENT = 1_000  # |constant| inside an exponent (or exp's argument) with a symbolic part
MAX_DIM = 1_000  # a literal matrix size, summation bound or explicit identity size

EXPECT = ("value", "condition", "any")
CONSTANTS = {"pi": sympy.pi, "E": sympy.E}
_NOT_FINITE = ("nan", "oo", "zoo", "inf", "infinity", "NaN")


class FormulaError(UsageError):
    """Formula text that is not a well-formed, well-typed formula (one line)."""


@dataclass(frozen=True)
class Typed:
    """A built node: its sympy value, its kind (``scalar``, ``matrix``, ``condition``), its
    shape (a matrix's (rows, cols), sympy integers or expressions in the sizes), an upper bound
    on the decimal digits of its value where it is a constant (None otherwise), and the
    largest magnitude of a constant inside it (for the exponent bound)."""

    expr: Any
    kind: str
    shape: tuple | None = None
    digits: float | None = None
    big: float = 0.0

    @property
    def constant(self) -> bool:
        return self.digits is not None


@dataclass(frozen=True)
class Parsed:
    """The result of ``read``: the expression, its kind and inferred shape, and the first shape
    error found on the tree ("" when it is well-typed)."""

    expr: Any
    kind: str
    shape: tuple | None
    shape_error: str


def read(text: Any, names: Mapping[str, Any], *, what: str = "expression",
         expect: str = "value") -> Parsed:
    """Read ``text`` with ``names`` (name -> sympy symbol or value) as its only free names.

    ``expect``: ``value`` (a scalar or a matrix), ``condition`` (a relation, or relations joined
    by ``&``/``|``) or ``any``.  Raises FormulaError (a UsageError) on anything else."""
    if expect not in EXPECT:
        raise ValueError(f"expect must be one of {EXPECT}")
    if not isinstance(text, str) or not text.strip():
        raise FormulaError(f"{what}: empty expression")
    if len(text) > MAX_LENGTH:
        raise FormulaError(f"{what}: the text is {len(text)} characters long; formulas are "
                           f"limited to {MAX_LENGTH}")
    if "\x00" in text:
        raise FormulaError(f"{what}: the text contains a NUL character")
    try:
        tree = ast.parse(text.strip(), mode="eval")
    except SyntaxError as exc:
        raise FormulaError(f"{what}: cannot read {show(text)} ({exc.msg})") from None
    except (RecursionError, MemoryError, ValueError, OverflowError) as exc:
        raise FormulaError(f"{what}: cannot read {show(text)} (nested too deeply or too large: "
                           f"{type(exc).__name__})") from None
    reader = _Reader(text, names, what)
    try:
        out = reader.node(tree.body, 0)
    except FormulaError:
        raise
    except (RecursionError, MemoryError) as exc:
        raise FormulaError(f"{what}: {show(text)} is too large to build ({type(exc).__name__})") \
            from None
    except Exception as exc:  # noqa: BLE001 - sympy's own refusal of a combination, as one line
        raise FormulaError(f"{what}: cannot read {show(text)} ({type(exc).__name__}: "
                           f"{_one_line(exc)})") from None
    if expect == "value" and out.kind == "condition":
        raise FormulaError(f"{what}: {show(text)} is a condition (a relation or a truth value), "
                           f"but a value is expected here")
    if expect == "condition" and out.kind != "condition":
        raise FormulaError(f"{what}: {show(text)} is a {out.kind}, but a condition (such as "
                           f"n >= 4*d) is expected here")
    return Parsed(out.expr, out.kind, out.shape, reader.shape_error)


def show(text: str, limit: int = 80) -> str:
    """``text`` quoted for a one-line message, cut after ``limit`` characters."""
    t = " ".join(text.split())
    return repr(t if len(t) <= limit else t[:limit] + "...")


def _one_line(exc: BaseException, limit: int = 100) -> str:
    lines = str(exc).strip().splitlines()
    line = lines[-1] if lines else ""
    return line if len(line) <= limit else line[:limit] + "..."


def same_dim(a: Any, b: Any) -> bool:
    """Whether two sizes are equal for every value of the size symbols."""
    if a == b:
        return True
    try:
        return sympy.expand(sympy.sympify(a) - sympy.sympify(b)) == 0
    except (TypeError, ValueError, sympy.SympifyError):
        return False


def _shape_str(shape: tuple) -> str:
    return f"{shape[0]}x{shape[1]}"


_BINOPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/", ast.Pow: "**"}
_COMPARE = {ast.Lt: sympy.Lt, ast.LtE: sympy.Le, ast.Gt: sympy.Gt, ast.GtE: sympy.Ge}
_REFUSED = {
    ast.Attribute: "an attribute other than .T", ast.Lambda: "a lambda", ast.ListComp:
    "a comprehension", ast.SetComp: "a comprehension", ast.DictComp: "a comprehension",
    ast.GeneratorExp: "a comprehension", ast.Dict: "a dictionary", ast.Set: "a set",
    ast.IfExp: "a conditional expression", ast.NamedExpr: "an assignment", ast.Await: "await",
    ast.Yield: "yield", ast.YieldFrom: "yield", ast.JoinedStr: "a string",
    ast.FormattedValue: "a string", ast.Starred: "a starred argument", ast.Slice: "a slice",
    ast.BoolOp: "'and'/'or' (use & and | between relations)",
}


class _Reader:
    """One walk over one tree (the text's), recording the first shape error."""

    def __init__(self, text: str, names: Mapping[str, Any], what: str) -> None:
        self.text, self.names, self.what = text, dict(names), what
        self.scopes: list[dict[str, Any]] = []  # summation indices in scope
        self.shape_error = ""

    # ------------------------------------------------------------------ errors and helpers
    def fail(self, message: str) -> FormulaError:
        return FormulaError(f"{self.what}: {show(self.text)} {message}")

    def token(self, node: ast.AST) -> str:
        seg = ast.get_source_segment(self.text.strip(), node) or type(node).__name__
        seg = " ".join(seg.split())
        return seg if len(seg) <= 40 else seg[:40] + "..."

    def mismatch(self, message: str) -> None:
        if not self.shape_error:
            self.shape_error = message

    # ---------------------------------------------------------------------------- the walk
    def node(self, node: ast.AST, depth: int) -> Typed:
        """The typed value of ``node``; a constant's own magnitude counts in ``big``."""
        t = self._node(node, depth)
        if t.constant and t.kind == "scalar":
            m = _magnitude(t.expr)
            if m > t.big:
                return Typed(t.expr, t.kind, t.shape, t.digits, m)
        return t

    def _node(self, node: ast.AST, depth: int) -> Typed:
        if depth > MAX_DEPTH:
            raise self.fail(f"is nested deeper than {MAX_DEPTH} levels")
        if isinstance(node, ast.Constant):
            return self.constant(node)
        if isinstance(node, ast.Name):
            return self.name(node)
        if isinstance(node, ast.BinOp):
            return self.chain(node, depth)
        if isinstance(node, ast.UnaryOp):
            return self.unary(node, depth)
        if isinstance(node, ast.Compare):
            return self.compare(node, depth)
        if isinstance(node, ast.Call):
            return self.call(node, depth)
        if isinstance(node, ast.Attribute):
            if node.attr != "T":
                raise self.fail(f"uses the attribute .{node.attr}: only .T (transpose) is allowed")
            return self.transpose(self.node(node.value, depth + 1), node)
        if isinstance(node, ast.Subscript):
            return self.subscript(node, depth)
        if isinstance(node, (ast.List, ast.Tuple)):
            raise self.fail(f"has a list or tuple {self.token(node)!r} outside BlockMatrix([[...]]) "
                            f"or a Sum's limits")
        what = _REFUSED.get(type(node), type(node).__name__)
        raise self.fail(f"is not a formula: {self.token(node)!r} is {what}, which formulas may "
                        f"not contain")

    def constant(self, node: ast.Constant) -> Typed:
        v = node.value
        if isinstance(v, bool):
            return Typed(sympy.true if v else sympy.false, "condition")
        if isinstance(v, int):
            digits = len(str(abs(v)))  # Python refuses over 4300 digits already
            if digits > MAX_DIGITS:
                raise self.fail(f"has a {digits}-digit number (at most {MAX_DIGITS})")
            return Typed(sympy.Integer(v), "scalar", digits=float(digits), big=float(abs(v)))
        if isinstance(v, float):
            if not math.isfinite(v):
                raise self.fail(f"has the number {self.token(node)!r}, which is not finite")
            seg = (ast.get_source_segment(self.text.strip(), node) or repr(v)).replace("_", "")
            try:
                value = sympy.Float(seg)
            except (ValueError, TypeError):
                value = sympy.Float(v)
            return Typed(value, "scalar", digits=abs(math.log10(abs(v))) + 17 if v else 1.0,
                         big=abs(v))
        if isinstance(v, complex):
            raise self.fail(f"has the complex number {self.token(node)!r}: formulas are real")
        kind = "a string" if isinstance(v, (str, bytes)) else f"the constant {v!r}"
        raise self.fail(f"is not a formula: {self.token(node)!r} is {kind}, which formulas may "
                        f"not contain")

    def name(self, node: ast.Name) -> Typed:
        key = node.id
        for scope in reversed(self.scopes):
            if key in scope:
                return Typed(scope[key], "scalar")
        if key in self.names:
            return self.bound(self.names[key], key)
        if key in CONSTANTS:
            value = CONSTANTS[key]
            return Typed(value, "scalar", digits=1.0, big=float(value))
        if key in FUNCTIONS:
            raise self.fail(f"uses the function {key} without calling it ({key}(...))")
        if key in _NOT_FINITE:
            raise self.fail(f"is not finite (it contains {key})")
        if key in ("I", "j"):
            raise self.fail(f"uses {key}, the imaginary unit to sympy: formulas are real")
        allowed = ", ".join(sorted(self.names)) or "none"
        raise self.fail(f"uses symbols this claim does not have: {key} (allowed: {allowed})")

    def bound(self, value: Any, key: str) -> Typed:
        if isinstance(value, (MatrixExpr, sympy.MatrixBase)):
            return Typed(value, "matrix", tuple(value.shape))
        if isinstance(value, bool):
            value = sympy.true if value else sympy.false
        if isinstance(value, (sympy.logic.boolalg.Boolean,)) and not isinstance(value, sympy.Expr):
            return Typed(value, "condition")
        if isinstance(value, (int, float)):
            value = sympy.sympify(value)  # a Python number bound by the caller, not text
        if not isinstance(value, sympy.Expr):
            raise self.fail(f"binds {key} to a {type(value).__name__}, which is not a value")
        if value.is_Number:
            size = float(abs(value)) if value.is_finite else math.inf
            return Typed(value, "scalar", digits=_digits_of(value), big=size)
        return Typed(value, "scalar")

    # --------------------------------------------------------------------------- operators
    def chain(self, node: ast.BinOp, depth: int) -> Typed:
        """``a op b op c ...`` of one precedence level, walked as one level of nesting."""
        ops = []
        left = node
        level = _level(node.op)
        while isinstance(left, ast.BinOp) and _level(left.op) == level and level != "pow":
            ops.append((left.op, left.right))
            left = left.left
        if not ops:  # a power: right-associative, and each side one level deeper
            return self.binary(node.op, self.node(node.left, depth + 1),
                               self.node(node.right, depth + 1), node)
        acc = self.node(left, depth + 1)
        for op, right in reversed(ops):
            acc = self.binary(op, acc, self.node(right, depth + 1), node)
        return acc

    def binary(self, op: ast.operator, a: Typed, b: Typed, node: ast.AST) -> Typed:
        if isinstance(op, (ast.BitAnd, ast.BitOr)):
            return self.logic(op, a, b, node)
        sym = _BINOPS.get(type(op))
        if sym is None:
            hint = " (write ** for a power)" if isinstance(op, ast.BitXor) else ""
            raise self.fail(f"uses the operator {_op_text(op)}, which formulas may not contain "
                            f"(allowed: + - * / ** and & | between relations){hint}")
        for t in (a, b):
            if t.kind == "condition":
                raise self.fail(f"uses a condition as a value in {self.token(node)!r}")
        big = max(a.big, b.big)
        if sym in ("+", "-"):
            if a.kind != b.kind:
                raise self.fail(f"adds a matrix and a scalar in {self.token(node)!r}")
            if a.kind == "matrix" and not all(map(same_dim, a.shape, b.shape)):
                self.mismatch(f"a {_shape_str(a.shape)} and a {_shape_str(b.shape)} matrix are "
                              f"added in {self.token(node)!r}")
            expr = a.expr + b.expr if sym == "+" else a.expr - b.expr
            return Typed(expr, a.kind, a.shape, _add_digits(a, b), big)
        if sym == "*":
            if a.kind == "matrix" and b.kind == "matrix":
                if not same_dim(a.shape[1], b.shape[0]):
                    self.mismatch(f"a {_shape_str(a.shape)} matrix times a {_shape_str(b.shape)} "
                                  f"matrix in {self.token(node)!r}")
                shape = (a.shape[0], b.shape[1])
            else:
                shape = a.shape if a.kind == "matrix" else b.shape
            kind = "matrix" if shape is not None else "scalar"
            return Typed(a.expr * b.expr, kind, shape, _add_digits(a, b), big)
        if sym == "/":
            if b.kind == "matrix":
                raise self.fail(f"divides by a matrix in {self.token(node)!r} (use Inverse(...))")
            return Typed(a.expr / b.expr, a.kind, a.shape, _add_digits(a, b), big)
        return self.power(a, b, node)

    def power(self, a: Typed, b: Typed, node: ast.AST) -> Typed:
        if b.kind == "matrix":
            raise self.fail(f"raises to a matrix power in {self.token(node)!r}")
        if a.kind == "matrix" and not same_dim(*a.shape):
            self.mismatch(f"a power of the non-square {_shape_str(a.shape)} matrix in "
                          f"{self.token(node)!r}")
        digits = None
        if a.constant and b.constant:
            e = _magnitude(b.expr)
            digits = max(a.digits, 1.0) * max(e, 1.0) + b.digits
            if digits > MAX_DIGITS:
                raise self.fail(f"computes a number too large to evaluate in "
                                f"{self.token(node)!r} (about {digits:.3g} digits; at most "
                                f"{MAX_DIGITS})")
        elif b.big > MAX_EXPONENT:
            raise self.fail(f"has an exponent too large to evaluate in {self.token(node)!r} "
                            f"(a constant of {b.big:.3g} in it; at most {MAX_EXPONENT})")
        if (a.kind == "matrix" and isinstance(a.expr, sympy.MatPow)
                and b.expr.is_integer is not True):
            # sympy folds (A^2)^(1/2) into A, which holds only for A PSD
            raise self.fail(f"takes a fractional power of a matrix power in "
                            f"{self.token(node)!r} (sympy would fold (A^2)^(1/2) into A); "
                            f"write the power of a symmetric matrix, e.g. (A*A.T)**(1/2)")
        return Typed(a.expr ** b.expr, a.kind, a.shape, digits, max(a.big, b.big))

    def unary(self, node: ast.UnaryOp, depth: int) -> Typed:
        if not isinstance(node.op, (ast.USub, ast.UAdd)):
            raise self.fail(f"uses the operator {_op_text(node.op)} in {self.token(node)!r} "
                            f"(allowed: unary - and +)")
        t = self.node(node.operand, depth + 1)
        if t.kind == "condition":
            raise self.fail(f"negates a condition in {self.token(node)!r}")
        return Typed(-t.expr if isinstance(node.op, ast.USub) else t.expr, t.kind, t.shape,
                     t.digits, t.big)

    def compare(self, node: ast.Compare, depth: int) -> Typed:
        parts = [self.node(node.left, depth + 1)]
        parts += [self.node(c, depth + 1) for c in node.comparators]
        for p in parts:
            if p.kind != "scalar":
                raise self.fail(f"compares a {p.kind} in {self.token(node)!r}: only scalars are "
                                f"compared")
        relations = []
        for op, lhs, rhs in zip(node.ops, parts, parts[1:]):
            rel = _COMPARE.get(type(op))
            if rel is None:
                raise self.fail(f"uses the comparison {_op_text(op)} in {self.token(node)!r} "
                                f"(allowed: < <= > >=)")
            relations.append(rel(lhs.expr, rhs.expr))
        expr = relations[0] if len(relations) == 1 else sympy.And(*relations)
        return Typed(expr, "condition", big=max(p.big for p in parts))

    def logic(self, op: ast.operator, a: Typed, b: Typed, node: ast.AST) -> Typed:
        if a.kind != "condition" or b.kind != "condition":
            raise self.fail(f"uses {_op_text(op)} between values in {self.token(node)!r}: "
                            f"& and | join conditions (relations)")
        expr = a.expr & b.expr if isinstance(op, ast.BitAnd) else a.expr | b.expr
        return Typed(expr, "condition", big=max(a.big, b.big))

    def transpose(self, t: Typed, node: ast.AST) -> Typed:
        if t.kind != "matrix":
            raise self.fail(f"transposes a {t.kind} in {self.token(node)!r}")
        return Typed(t.expr.T, "matrix", (t.shape[1], t.shape[0]), None, t.big)

    def subscript(self, node: ast.Subscript, depth: int) -> Typed:
        base = self.node(node.value, depth + 1)
        if base.kind != "matrix":
            raise self.fail(f"subscripts a {base.kind} in {self.token(node)!r}: only matrices "
                            f"have entries")
        index = node.slice
        items = list(index.elts) if isinstance(index, ast.Tuple) else [index]
        if len(items) != 2:
            raise self.fail(f"subscripts {self.token(node)!r} with {len(items)} indices; write "
                            f"M[i, j], M[:, j] or M[i, :]")
        keys, shape = [], []
        for item, size in zip(items, base.shape):
            if isinstance(item, ast.Slice):
                if item.lower is not None or item.upper is not None or item.step is not None:
                    raise self.fail(f"slices {self.token(node)!r}: only the whole range ':' is "
                                    f"allowed")
                keys.append(slice(None))
                shape.append(size)
                continue
            k = _integer_literal(item)
            if k is None:
                raise self.fail(f"indexes {self.token(node)!r} with {self.token(item)!r}: indices "
                                f"are integer literals or ':'")
            if k < 0 or (getattr(size, "is_Integer", False) and k >= int(size)):
                raise self.fail(f"indexes {self.token(node)!r} out of range")
            keys.append(k)
            shape.append(None)
        expr = base.expr[tuple(keys)]
        if shape == [None, None]:
            return Typed(expr, "scalar")
        shape = tuple(1 if s is None else s for s in shape)
        return Typed(expr, "matrix", shape)

    # ------------------------------------------------------------------------------- calls
    def call(self, node: ast.Call, depth: int) -> Typed:
        if not isinstance(node.func, ast.Name):
            inner = node.func
            while isinstance(inner, (ast.Call, ast.Attribute, ast.Subscript)):
                if isinstance(inner, ast.Attribute) and inner.attr != "T":
                    raise self.fail(f"uses the attribute .{inner.attr}: only .T (transpose) is "
                                    f"allowed")
                inner = inner.func if isinstance(inner, ast.Call) else inner.value
            if isinstance(inner, ast.Name) and inner.id not in FUNCTIONS:
                raise self.fail(f"calls {inner.id}, which is not an allowed function (allowed: "
                                f"{', '.join(sorted(FUNCTIONS))})")
            raise self.fail(f"calls {self.token(node.func)!r}: only the functions "
                            f"{', '.join(sorted(FUNCTIONS))} may be called, by name")
        fname = node.func.id
        if fname not in FUNCTIONS:
            if fname in self.names:
                raise self.fail(f"calls {fname}, which is a symbol, not a function")
            raise self.fail(f"calls {fname}, which is not an allowed function (allowed: "
                            f"{', '.join(sorted(FUNCTIONS))})")
        if node.keywords:
            raise self.fail(f"passes a keyword argument to {fname}: arguments are positional")
        if any(isinstance(a, ast.Starred) for a in node.args):
            raise self.fail(f"passes a starred argument to {fname}")
        spec = FUNCTIONS[fname]
        n = len(node.args)
        if n < spec.min_args or (spec.max_args is not None and n > spec.max_args):
            want = (str(spec.min_args) if spec.max_args == spec.min_args else
                    f"{spec.min_args} or more" if spec.max_args is None else
                    f"{spec.min_args} to {spec.max_args}")
            raise self.fail(f"calls {fname} with {n} arguments ({fname} takes {want})")
        return spec.build(self, node, depth + 1)

    def args(self, node: ast.Call, depth: int, kinds: str = "scalar") -> list[Typed]:
        out = [self.node(a, depth) for a in node.args]
        for a, t in zip(node.args, out):
            if kinds != "any" and t.kind != kinds:
                raise self.fail(f"passes a {t.kind} {self.token(a)!r} to {node.func.id}, which "
                                f"takes a {kinds}")
        return out

    def dim(self, node: ast.AST, depth: int, fname: str) -> Any:
        """A size argument: an integer expression in the size symbols, at most MAX_DIM where it
        is a constant."""
        t = self.node(node, depth)
        if t.kind != "scalar" or t.expr.is_integer is not True or t.expr.is_negative:
            raise self.fail(f"gives {fname} the size {self.token(node)!r}: sizes are non-negative "
                            f"integers or expressions in the sizes")
        if t.big > MAX_DIM or (t.expr.is_Integer and int(t.expr) > MAX_DIM):
            raise self.fail(f"gives {fname} the size {self.token(node)!r}: a literal size is at "
                            f"most {MAX_DIM}")
        return t.expr


@dataclass(frozen=True)
class Function:
    """An allowed call: its arity (max None: any number) and how it builds and types."""

    min_args: int
    max_args: int | None
    build: Callable[[_Reader, ast.Call, int], Typed]


def _scalar_fn(fn: Callable, exponent: bool = False) -> Callable:
    def build(r: _Reader, node: ast.Call, depth: int) -> Typed:
        args = r.args(node, depth)
        big = max(a.big for a in args)
        digits = None
        if all(a.constant for a in args):
            digits = sum(a.digits for a in args)
            if exponent:  # exp(c): about c / ln 10 digits
                digits += _magnitude(args[0].expr) / math.log(10)
                if digits > MAX_DIGITS:
                    raise r.fail(f"computes a number too large to evaluate in "
                                 f"{r.token(node)!r} (about {digits:.3g} digits)")
        elif exponent and args[0].big > MAX_EXPONENT:
            raise r.fail(f"has an exponent too large to evaluate in {r.token(node)!r} "
                         f"(a constant of {args[0].big:.3g} in it; at most {MAX_EXPONENT})")
        return Typed(fn(*[a.expr for a in args]), "scalar", None, digits, big)
    return build


def _matrix_fn(fn: Callable, square: bool, result: str) -> Callable:
    """Inverse, Transpose, trace: one matrix argument."""
    def build(r: _Reader, node: ast.Call, depth: int) -> Typed:
        (m,) = r.args(node, depth, "matrix")
        if square and not same_dim(*m.shape):
            r.mismatch(f"{node.func.id} of the non-square {_shape_str(m.shape)} matrix in "
                       f"{r.token(node)!r}")
        if result == "scalar":
            return Typed(fn(m.expr), "scalar", None, None, m.big)
        shape = m.shape if result == "same" else (m.shape[1], m.shape[0])
        return Typed(fn(m.expr), "matrix", shape, None, m.big)
    return build


def _special(cls, count: int) -> Callable:
    """Identity(k), ZeroMatrix(r, c), OneMatrix(r, c): sizes only."""
    def build(r: _Reader, node: ast.Call, depth: int) -> Typed:
        dims = [r.dim(a, depth, node.func.id) for a in node.args]
        shape = (dims[0], dims[0]) if count == 1 else tuple(dims)
        return Typed(cls(*dims), "matrix", shape)
    return build


def _eye(r: _Reader, node: ast.Call, depth: int) -> Typed:
    k = r.dim(node.args[0], depth, "eye")
    if not k.is_Integer:
        raise r.fail(f"calls eye with the size {r.token(node.args[0])!r}: eye builds an explicit "
                     f"matrix and needs a number (Identity(d) is the symbolic identity)")
    return Typed(sympy.ImmutableMatrix(sympy.eye(int(k))), "matrix", (k, k))


def _rational(r: _Reader, node: ast.Call, depth: int) -> Typed:
    values = []
    for a in node.args:
        k = _integer_literal(a)
        if k is None:
            raise r.fail(f"calls Rational with {r.token(a)!r}: its arguments are integer literals")
        values.append(k)
    if len(values) == 2 and values[1] == 0:
        raise r.fail("calls Rational with a zero denominator")
    digits = float(sum(len(str(abs(v))) for v in values))
    value = sympy.Rational(*values)
    return Typed(value, "scalar", digits=digits, big=float(max(abs(v) for v in values)))


def _block_matrix(r: _Reader, node: ast.Call, depth: int) -> Typed:
    grid = node.args[0]
    if not isinstance(grid, ast.List) or not grid.elts or not all(
            isinstance(row, ast.List) and row.elts for row in grid.elts):
        raise r.fail("calls BlockMatrix without a grid: write BlockMatrix([[A, B], [C, D]])")
    widths = {len(row.elts) for row in grid.elts}
    if len(widths) != 1:
        raise r.fail("calls BlockMatrix with rows of different lengths")
    rows = [[r.node(b, depth + 1) for b in row.elts] for row in grid.elts]
    for row in rows:
        for b in row:
            if b.kind != "matrix":
                raise r.fail(f"has a {b.kind} block in BlockMatrix: blocks are matrices "
                             f"(a scalar c is c*Identity(1))")
    for i, row in enumerate(rows):
        for j, b in enumerate(row):
            if not same_dim(b.shape[0], row[0].shape[0]):
                r.mismatch(f"row {i} of the block grid has blocks of heights {row[0].shape[0]} "
                           f"and {b.shape[0]}")
            if not same_dim(b.shape[1], rows[0][j].shape[1]):
                r.mismatch(f"column {j} of the block grid has blocks of widths "
                           f"{rows[0][j].shape[1]} and {b.shape[1]}")
    shape = (sympy.Add(*[row[0].shape[0] for row in rows]),
             sympy.Add(*[b.shape[1] for b in rows[0]]))
    expr = sympy.BlockMatrix([[b.expr for b in row] for row in rows])
    return Typed(expr, "matrix", shape, None, max(b.big for row in rows for b in row))


def _sum(r: _Reader, node: ast.Call, depth: int) -> Typed:
    """Sum(body, (i, lo, hi), ...): the indices are in scope in the body only."""
    limits, scope = [], {}
    for lim in node.args[1:]:
        if not isinstance(lim, ast.Tuple) or len(lim.elts) != 3 or not isinstance(
                lim.elts[0], ast.Name):
            raise r.fail(f"gives Sum the limits {r.token(lim)!r}: write (i, lo, hi)")
        name = lim.elts[0].id
        if name in FUNCTIONS or name in CONSTANTS:
            raise r.fail(f"uses {name} as a summation index")
        index = r.names.get(name)
        if isinstance(index, (MatrixExpr, sympy.MatrixBase)) or (
                index is not None and not isinstance(index, sympy.Symbol)):
            raise r.fail(f"uses {name}, which is not a scalar symbol, as a summation index")
        index = index if index is not None else sympy.Symbol(name)
        r.scopes.append(scope)
        try:
            lo, hi = (r.node(e, depth + 1) for e in lim.elts[1:])
        finally:
            r.scopes.pop()
        for t, e in ((lo, lim.elts[1]), (hi, lim.elts[2])):
            if t.kind != "scalar" or t.big > MAX_DIM:
                raise r.fail(f"gives Sum the bound {r.token(e)!r}: bounds are scalars with "
                             f"constants at most {MAX_DIM}")
        scope[name] = index
        limits.append((index, lo.expr, hi.expr))
    r.scopes.append(scope)
    try:
        body = r.node(node.args[0], depth + 1)
    finally:
        r.scopes.pop()
    if body.kind == "condition":
        raise r.fail("sums a condition")
    return Typed(sympy.Sum(body.expr, *limits), body.kind, body.shape, None, body.big)


def _log(r: _Reader, node: ast.Call, depth: int) -> Typed:
    return _scalar_fn(sympy.log)(r, node, depth)


FUNCTIONS: dict[str, Function] = {
    "sqrt": Function(1, 1, _scalar_fn(sympy.sqrt)),
    "exp": Function(1, 1, _scalar_fn(sympy.exp, exponent=True)),
    "log": Function(1, 2, _log),
    "Abs": Function(1, 1, _scalar_fn(sympy.Abs)),
    "Max": Function(1, None, _scalar_fn(sympy.Max)),
    "Min": Function(1, None, _scalar_fn(sympy.Min)),
    "Rational": Function(1, 2, _rational),
    "Identity": Function(1, 1, _special(sympy.Identity, 1)),
    "ZeroMatrix": Function(2, 2, _special(sympy.ZeroMatrix, 2)),
    "OneMatrix": Function(2, 2, _special(sympy.OneMatrix, 2)),
    "eye": Function(1, 1, _eye),
    "Inverse": Function(1, 1, _matrix_fn(sympy.Inverse, True, "same")),
    "Transpose": Function(1, 1, _matrix_fn(sympy.Transpose, False, "transposed")),
    "trace": Function(1, 1, _matrix_fn(sympy.Trace, True, "scalar")),
    "BlockMatrix": Function(1, 1, _block_matrix),
    "Sum": Function(2, None, _sum),
}


def _level(op: ast.operator) -> str:
    if isinstance(op, (ast.Add, ast.Sub)):
        return "add"
    if isinstance(op, (ast.Mult, ast.Div)):
        return "mul"
    if isinstance(op, (ast.BitAnd, ast.BitOr)):
        return "logic"
    return "pow"


def _op_text(op: ast.AST) -> str:
    return {ast.MatMult: "@", ast.Mod: "%", ast.FloorDiv: "//", ast.LShift: "<<",
            ast.RShift: ">>", ast.BitAnd: "&", ast.BitOr: "|", ast.BitXor: "^", ast.Invert: "~", ast.Not: "not",
            ast.Eq: "==", ast.NotEq: "!=", ast.Is: "is", ast.IsNot: "is not", ast.In: "in",
            ast.NotIn: "not in"}.get(type(op), type(op).__name__)


def _integer_literal(node: ast.AST) -> int | None:
    """An integer literal, possibly negated; None for anything else."""
    sign = 1
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        sign, node = -1, node.operand
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(
            node.value, bool) and len(str(abs(node.value))) <= MAX_DIGITS:
        return sign * node.value
    return None


def _magnitude(expr: Any) -> float:
    """|expr| as a float for a constant (inf where float cannot hold it)."""
    try:
        return abs(float(expr))
    except (TypeError, ValueError, OverflowError):
        try:
            return abs(float(sympy.N(expr, 5)))
        except (TypeError, ValueError, OverflowError):
            return math.inf


def _digits_of(value: sympy.Expr) -> float:
    if value.is_Rational:
        return float(len(str(abs(value.p))) + len(str(value.q)))
    m = _magnitude(value)
    return abs(math.log10(m)) + 17 if 0 < m < math.inf else 17.0


def _add_digits(a: Typed, b: Typed) -> float | None:
    """Digits of a + b, a * b, a / b for constants: at most the sum of theirs (and one carry)."""
    if a.constant and b.constant:
        digits = a.digits + b.digits + 1
        if digits > MAX_DIGITS:
            raise FormulaError(f"a constant of about {digits:.3g} digits is too large to evaluate")
        return digits
    return None
