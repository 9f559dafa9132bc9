"""The formula parser treats text as data: it reads every declared formula back exactly, and on
random text or random syntax trees it never executes anything and never raises anything but its
one usage error."""
import builtins
import contextlib
from unittest import mock

import pytest
import sympy
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verify import formula_parser
from verify.errors import UsageError
from verify.formula_parser import FUNCTIONS, FormulaError, read
from verify.formulas import FormulaSymbol, formula_str
from verify.registry import all_claims

REAL_SYMPIFY = sympy.sympify  # the reference, on text the parser printed; never on input

# the symbols of ahn2023 Thm. 1's A_top and of a hypothesis: the random texts use them
SYMBOLS = {s.name: s.sympy() for s in (
    FormulaSymbol("n"), FormulaSymbol("d"), FormulaSymbol("L"), FormulaSymbol("x"),
    FormulaSymbol("U", "matrix", ("d", "d")), FormulaSymbol("X", "matrix", ("d", "n")),
    FormulaSymbol("w", "matrix", ("d", "1")))}


def _declared():
    for claim in all_claims():
        for f in claim.formulas:
            texts = [f.text]
            if claim.correction is not None and f.name in claim.correction.formulas:
                texts.append(claim.correction.formulas[f.name])
            for text in texts:
                yield pytest.param(f, text, id=f"{claim.id}.{f.name}.{len(texts)}")


@contextlib.contextmanager
def no_eval():
    """eval or exec of text, and sympify of a string, raise if anything calls them inside the
    block (exec of a compiled module is the import machinery, and passes)."""
    def guard(real, what):
        def call(source, *args, **kwargs):
            if isinstance(source, (str, bytes)):
                raise AssertionError(f"the parser called {what} on {source!r}")
            return real(source, *args, **kwargs)
        return call

    with mock.patch.object(builtins, "eval", guard(builtins.eval, "eval")), \
            mock.patch.object(builtins, "exec", guard(builtins.exec, "exec")), \
            mock.patch.object(sympy, "sympify", guard(sympy.sympify, "sympify")):
        yield


def guarded_read(*args, **kwargs):
    with no_eval():
        return read(*args, **kwargs)


@pytest.mark.parametrize("formula,text", list(_declared()))
def test_every_declared_formula_reads_as_sympify_read_it_and_round_trips(formula, text):
    # sympify on the claims' own texts (trusted, in the test only) is the reference
    reference = sympy.sympify(text, locals=formula.locals())
    parsed = read(text, formula.locals(), expect="any")
    assert parsed.expr == reference
    printed = formula_str(parsed.expr)  # what mutate and corrections write back
    again = read(printed, formula.locals(), expect="any")
    assert again.expr == sympy.sympify(printed, locals=formula.locals())
    assert again.kind == parsed.kind


# ------------------------------------------------------------------------- random trees
NAMES = st.sampled_from(sorted(SYMBOLS) + ["__import__", "os", "S", "lambdify", "sympify",
                                           "Function", "Symbol", "getattr", "eval", "exec",
                                           "open", "factorial", "q", "nan", "oo", "I", "pi"])
NUMBERS = st.one_of(st.integers(-10**6, 10**6).map(str), st.sampled_from(
    ["0", "1e308", "1e400", "0.5", "1j", "10**10", "9**9**9", "2**10000", "True", "None", "...",
     "'os'", "b'x'", "\"__import__('os').system('touch CANARY')\""]))
FUNCS = st.sampled_from(sorted(FUNCTIONS) + ["S", "lambdify", "sympify", "eval", "exec",
                                             "getattr", "Function", "Symbol", "factorial",
                                             "__import__", "open", "print", "x", "U"])


@st.composite
def trees(draw, depth=0):
    """Source text of a random expression: the formula grammar plus every hostile construct."""
    if depth > 3 or draw(st.integers(0, 3)) == 0:
        return draw(st.one_of(NAMES, NUMBERS))
    sub = lambda: draw(trees(depth + 1))  # noqa: E731
    kind = draw(st.integers(0, 12))
    if kind == 0:
        op = draw(st.sampled_from(["+", "-", "*", "/", "**", "@", "%", "//", "^", "&", "|",
                                   "<<", "<", "<=", ">", ">=", "==", "!=", " and ", " or ",
                                   " if x else ", " is ", " in "]))
        return f"({sub()}){op}({sub()})"
    if kind == 1:
        return draw(st.sampled_from(["-", "+", "~", "not "])) + f"({sub()})"
    if kind in (2, 3):
        args = [sub() for _ in range(draw(st.integers(0, 3)))]
        if draw(st.booleans()) and args:
            args[-1] = "k=" + args[-1]
        return f"{draw(FUNCS)}({', '.join(args)})"
    if kind == 4:
        attr = draw(st.sampled_from(["T", "__class__", "subs", "func", "evalf", "__globals__"]))
        return f"({sub()}).{attr}"
    if kind == 5:
        idx = draw(st.sampled_from(["0", "0, 0", ":, 0", "0:2, 0", "'a'", "x"]))
        return f"({sub()})[{idx}]"
    if kind == 6:
        return f"(lambda: {sub()})()"
    if kind == 7:
        return f"[{sub()} for x in ({sub()},)]"
    if kind == 8:
        return f"[[{sub()}, {sub()}], [{sub()}]]"
    if kind == 9:
        return f"Sum({sub()}, (i, 0, {sub()}))"
    if kind == 10:
        return f"BlockMatrix([[{sub()}, {sub()}], [{sub()}, {sub()}]])"
    if kind == 11:
        return f"f'{{{sub()}}}'"
    return f"({sub()}, {sub()})"


@settings(max_examples=300, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.too_slow])
@given(text=trees(), expect=st.sampled_from(["value", "condition", "any"]))
def test_random_trees_never_execute_and_raise_only_the_usage_error(text, expect):
    try:
        parsed = guarded_read(text, SYMBOLS, what="formula f", expect=expect)
    except FormulaError as exc:
        assert isinstance(exc, UsageError)
        message = str(exc)
        assert "\n" not in message and message.startswith("formula f:")
        return
    assert parsed.kind in ("scalar", "matrix", "condition")
    # what reads back is a formula: printed, it reads again to the same expression
    if not parsed.shape_error:  # it prints as text that reads back, as sympy would read it
        printed = formula_str(parsed.expr)
        assert read(printed, SYMBOLS, expect="any").expr == REAL_SYMPIFY(printed, locals=SYMBOLS)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(text=st.text(max_size=60))
def test_random_strings_raise_only_the_usage_error(text):
    try:
        guarded_read(text, SYMBOLS, what="formula f")
    except FormulaError as exc:
        assert "\n" not in str(exc)


@pytest.mark.parametrize("text,needle", [
    ("S(lambdify([], '_'+'_imp'+'ort_'+'_(\"os\").system(\"touch /tmp/x\")')())", "calls S"),
    ("lambdify([], 'print(1)')()", "calls lambdify"),
    ("x.__class__", "attribute .__class__"),
    ("U.subs(d, 1)", "attribute .subs"),
    ("getattr(x, 'T')", "calls getattr"),
    ("'x'", "is a string"),
    ("[y for y in (1,)]", "comprehension"),
    ("(lambda: 1)()", "calls 'lambda: 1'"),
    ("sqrt(x)(1)", "by name"),
    ("x[0]", "subscripts a scalar"),
    ("Max(x, key=1)", "keyword argument"),
    ("Function('f')(x)", "calls Function"),
    ("Symbol('x')", "calls Symbol"),
    ("sympify('x')", "calls sympify"),
    ("9**9**9", "too large to evaluate"),
    ("x**(10**9)", "exponent too large"),
    ("exp(exp(10**4))", "too large"),
    ("factorial(10**9)", "calls factorial"),
    ("x > 3", "is a condition"),
    ("True", "is a condition"),
    ("U*ZeroMatrix(n, d)", ""),  # reads, with a shape error (below)
    ("Identity(10**9)", "literal size is at most"),
    ("Identity(d/2)", "sizes are non-negative integers"),
    ("Sum(x, (i, 0, 10**9))", "bounds are scalars"),
    ("x ^ 2", "write ** for a power"),
    ("x == 1", "allowed: < <= > >="),
    ("(" * 250 + "x" + ")" * 250, "cannot read"),
    ("sqrt(" * 120 + "x" + ")" * 120, "nested deeper than 100"),
    ("x" + "+x" * 6000, "characters long"),
    ("-" * 3000 + "x", "cannot read"),
    ("f(x)", "calls f"),
    ("q + 1", "does not have: q"),
    ("nan", "not finite"),
    ("1e400", "not finite"),
    ("1j", "complex"),
    ("Inverse(x)", "takes a matrix"),
    ("trace()", "with 0 arguments"),
    ("x and n", "'and'/'or'"),
])
def test_hostile_texts_are_refused_naming_the_token(text, needle):
    if not needle:
        parsed = guarded_read(text, SYMBOLS, expect="value")
        assert "dxd matrix times a nxd matrix" in parsed.shape_error
        return
    with pytest.raises(FormulaError) as info:
        guarded_read(text, SYMBOLS, expect="value")
    assert needle in str(info.value) and "\n" not in str(info.value)


def test_a_summation_index_is_in_scope_only_in_its_body():
    s = read("Sum(x**i, (i, 0, L))", SYMBOLS).expr
    assert isinstance(s, sympy.Sum)
    with pytest.raises(FormulaError, match="does not have: i"):
        read("Sum(x, (i, 0, L)) + i", SYMBOLS)


def test_conditions_join_with_and_or_and_chain():
    c = read("(n >= 4*d) & (x < 1)", SYMBOLS, expect="condition").expr
    assert isinstance(c, sympy.And)
    chained = read("0 < x <= 1", SYMBOLS, expect="condition").expr
    assert chained == sympy.And(sympy.Lt(0, SYMBOLS["x"]), sympy.Le(SYMBOLS["x"], 1))
    with pytest.raises(FormulaError, match="between values"):
        read("x & n", SYMBOLS, expect="any")


def test_a_fractional_power_of_a_matrix_power_is_refused_not_folded():
    # sympy folds (W^T W^T)^(-1/2) into W^(-T), true only for W PSD: a derived "correction"
    # once passed through that fold
    W, w = sympy.MatrixSymbol("W", 2, 2), sympy.MatrixSymbol("w", 2, 1)
    with pytest.raises(FormulaError, match="fractional power of a matrix power"):
        read("(Transpose(W)*Transpose(W))**(-1/2)*w", {"W": W, "w": w}, what="t")
    assert str(read("(W*W.T)**(-1/2)*w", {"W": W, "w": w}, what="t").expr) == "(W*W.T)**(-1/2)*w"
    assert str(read("(W*W)**2*w", {"W": W, "w": w}, what="t").expr) == "W**4*w"


def test_a_formula_of_real_matrices_that_is_never_real_is_refused():
    """Traces, determinants and entries of the papers' matrices are real: sqrt(-1 - tr(A)^2) is
    not a real number for any A (sympy alone cannot tell: a MatrixSymbol may be complex), while
    sqrt(1 - tr(A)) is real for some A and is read."""
    from verify.formulas import NamedFormula

    f = NamedFormula("q", "trace(A)", (FormulaSymbol("d"), FormulaSymbol("A", "matrix", ("d", "d"))),
                     "a trace", "(1)")
    for text in ("sqrt(-1 - trace(A)**2)", "log(-1 - trace(A*A.T)**2)", "sqrt(-1 - A[0, 0]**2)"):
        with pytest.raises(UsageError, match="is not a real number for any value"):
            f.parse(text)
    assert f.parse("sqrt(1 - trace(A))").has(sympy.Trace)
