"""Hostile and careless input, as a reviewer running other people's conjectures would meet it:
every invocation exits 2 with one line that names what is wrong, or gives a verdict that is not
wrong (inconclusive where nothing read the formula); none executes code, hangs or tracebacks.

The first rows are the commands of the hardening issue; the rest try every route to code
execution through sympy and Python, resource exhaustion, malformed matrices, shapes and sizes.
"""
import glob
import json

import pytest

from verify.cli import main

CANARY = "/tmp/icl-verify-canary-{}"


def run(capsys, argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def touch(tag: str) -> str:
    return f'__import__("os").system("touch {CANARY.format(tag)}")'


A = ["check", "ahn2023.thm1", "--tier", "symbolic", "--budget", "quick"]
QUICK = ["--budget", "quick"]
DEEP = "[" * 5000 + "1" + "]" * 5000

# (id, argv, the one-line error's needle)
USAGE = [
    # the commands
    ("issue-lambdify", [*A, "--set", "A_iso=S(lambdify([], '_'+'_imp'+'ort_'+'_(\"os\").system("
                                     "\"touch /tmp/icl-verify-canary-issue\")')())"], "calls S"),
    ("issue-power-tower", [*A, "--set", "A_iso=9**9**9"], "too large to evaluate"),
    ("issue-big-d", ["check", "ahn2023.thm1", *QUICK, "--size", "d=100000", "--tier", "numeric"],
     "too large"),
    ("issue-rotated-300", ["check", "ahn2023.thm1", *QUICK, "--sigma",
                           "rotated:" + ",".join(str(i) for i in range(1, 301))], "300x300"),
    ("issue-deep-sigma", ["check", "ahn2023.thm1", *QUICK, "--sigma", DEEP], "--sigma"),
    ("issue-out-empty", ["report", "ahn2023.thm1", *QUICK, "--out", ""], "--out ''"),
    ("issue-condition", [*A, "--set", "A_iso=n>3"], "is a condition"),
    ("issue-shape", [*A, "--set", "A_top=U*ZeroMatrix(n,d)"], "ill-typed"),
    ("issue-factorial", [*A, "--set", "A_iso=factorial(10**9)"], "calls factorial"),
    ("issue-print", [*A, "--set", "A_iso=lambdify([], 'print(1)')()"], "calls lambdify"),
    # code execution through Python
    ("import", [*A, "--set", f"A_iso={touch('import')}"], "attribute .system"),
    ("eval", [*A, "--set", "A_iso=eval('1')"], "calls eval"),
    ("exec", [*A, "--set", f"A_iso=exec('{touch('exec')}')"], "calls exec"),
    ("compile", [*A, "--set", "A_iso=compile('1', '', 'eval')"], "calls compile"),
    ("open", [*A, "--set", "A_iso=open('/etc/passwd')"], "calls open"),
    ("globals", [*A, "--set", "A_iso=globals()"], "calls globals"),
    ("getattr", [*A, "--set", "A_iso=getattr(n, '__class__')"], "calls getattr"),
    ("dunder-chain", [*A, "--set", "A_iso=n.__class__.__mro__"], "attribute .__mro__"),
    ("dunder-call", [*A, "--set", "A_iso=(1).__class__.__subclasses__()"], ".__subclasses__"),
    ("lambda", [*A, "--set", f"A_iso=(lambda: {touch('lambda')})()"], "calls 'lambda"),
    ("comprehension", [*A, "--set", "A_iso=[x for x in (1,)]"], "comprehension"),
    ("walrus", [*A, "--set", "A_iso=(y := 1)"], "assignment"),
    ("fstring", [*A, "--set", "A_iso=f'{n}'"], "a string"),
    ("string", [*A, "--set", "A_iso='n'"], "a string"),
    ("bytes", [*A, "--set", "A_iso=b'n'"], "a string"),
    ("ifexp", [*A, "--set", "A_iso=n if n else d"], "conditional expression"),
    ("statement", [*A, "--set", "A_iso=1; import os"], "cannot read"),
    ("newline", [*A, "--set", "A_iso=1\nimport os"], "cannot read"),
    ("nul", [*A, "--set", "A_iso=1\x00"], "NUL"),
    # code execution through sympy's namespace
    ("sympify", [*A, "--set", "A_iso=sympify('n')"], "calls sympify"),
    ("S", [*A, "--set", "A_iso=S('n')"], "calls S"),
    ("parse_expr", [*A, "--set", "A_iso=parse_expr('1')"], "calls parse_expr"),
    ("Function", [*A, "--set", "A_iso=Function('f')(n)"], "calls Function"),
    ("Symbol", [*A, "--set", "A_iso=Symbol('n')"], "calls Symbol"),
    ("Lambda", [*A, "--set", "A_iso=Lambda(n, n)(1)"], "calls Lambda"),
    ("subs", [*A, "--set", "A_iso=n.subs(n, 1)"], "attribute .subs"),
    ("evalf", [*A, "--set", "A_iso=(1/n).evalf()"], "attribute .evalf"),
    ("srepr", [*A, "--set", "A_iso=srepr(n)"], "calls srepr"),
    ("Integer", [*A, "--set", "A_iso=Integer(1)"], "calls Integer"),
    ("keyword", [*A, "--set", "A_iso=Max(n, d, evaluate=False)"], "keyword argument"),
    ("starred", [*A, "--set", "A_iso=Max(*[n])"], "starred"),
    # resource exhaustion
    ("big-exponent", [*A, "--set", "A_iso=n**(10**9)"], "exponent too large"),
    ("exp-tower", [*A, "--set", "A_iso=exp(exp(exp(100)))"], "too large"),
    ("big-literal", [*A, "--set", "A_iso=10**20000"], "too large"),
    ("big-rational", [*A, "--set", "A_iso=Rational(10**9999, 3)"], "integer literals"),
    ("huge-identity", [*A, "--set", "A_top=Identity(10**9)"], "literal size is at most"),
    ("huge-sum", ["check", "gatmiry2024.cor_a4", *QUICK, "--tier", "symbolic", "--set",
                  "second=Sum(trace(A), (i, 0, 10**9))"], "bounds are scalars"),
    ("long-text", [*A, "--set", "A_iso=" + "+".join(["n"] * 6000)], "characters long"),
    ("deep-nesting", [*A, "--set", "A_iso=" + "sqrt(" * 150 + "n" + ")" * 150], "nested deeper"),
    ("deep-parens", [*A, "--set", "A_iso=" + "(" * 300 + "n" + ")" * 300], "cannot read"),
    ("unary-chain", [*A, "--set", "A_iso=" + "-" * 5000 + "n"], "cannot read"),
    ("big-n", ["check", "ahn2023.thm1", *QUICK, "--size", "n=99999999999999999999"], "too large"),
    ("big-budget-d", ["check", "ahn2023.thm1", "--budget", "paper", "--size", "d=100000"],
     "too large"),
    ("report-big-d", ["report", "ahn2023.thm1", *QUICK, "--size", "d=100000", "--out",
                      "/tmp/icl-verify-never-written"], "too large"),
    ("mutate-big-d", ["mutate", "ahn2023.thm1", "--size", "d=100000"], "too large"),
    ("symbolic-sigma", ["check", "ahn2023.thm1", *QUICK, "--sigma",
                        "rotated:" + ",".join(str(i) for i in range(1, 21))], "symbolic tier"),
    # malformed matrices and shapes
    ("scalar-plus-matrix", [*A, "--set", "A_top=U.T*U.T.T.T + 1"], "adds a matrix and a scalar"),
    ("one-index", [*A, "--set", "A_top=U[0]"], "1 indices"),
    ("block-shape", [*A, "--set", "A_top=BlockMatrix([[U, U]])"], "must be dxd"),
    ("block-ragged", [*A, "--set", "A_top=BlockMatrix([[U, U], [U]])"], "rows of different"),
    ("matrix-power", [*A, "--set", "A_top=n**U"], "matrix power"),
    ("divide-matrix", [*A, "--set", "A_top=U/U"], "divides by a matrix"),
    ("true", [*A, "--set", "A_iso=True"], "is a condition"),
    ("inf", [*A, "--set", "A_iso=1e400"], "not finite"),
    ("complex", [*A, "--set", "A_iso=1j"], "complex"),
    ("imaginary", [*A, "--set", "A_iso=I"], "imaginary unit"),
    ("never-real", ["check", "yang2024.lemma6", *QUICK, "--set", "gamma=sqrt(-eta_w/eta_Q)"],
     "is not a real number for any value of its symbols"),
    ("xor", [*A, "--set", "A_iso=n^2"], "write ** for a power"),
    ("equality", [*A, "--set", "A_iso=n == 1"], "allowed: < <= > >="),
    ("sigma-ragged", ["check", "ahn2023.thm1", *QUICK, "--sigma", "[[1,0],[0,1],[0,0]]"],
     "not a square"),
    ("sigma-nested", ["check", "ahn2023.thm1", *QUICK, "--sigma", "[[[1]]]"], "--sigma"),
    ("sigma-exponent", ["check", "ahn2023.thm1", *QUICK, "--sigma", "diag:1e999999999"],
     "not a number"),
    ("sigma-long", ["check", "ahn2023.thm1", *QUICK, "--sigma", "diag:" + "1," * 60000 + "1"],
     "characters long"),
    ("sigma-json", ["check", "ahn2023.thm1", *QUICK, "--sigma", '{"a": 1}'], "--sigma"),
    ("sigma-zero-division", ["check", "ahn2023.thm1", *QUICK, "--sigma", "diag:1/0,1"],
     "divides by zero"),
    # options
    ("timeout-zero", [*A, "--timeout", "0"], "positive number of seconds"),
    ("timeout-nan", [*A, "--timeout", "nan"], "positive number of seconds"),
    ("timeout-inf", ["mutate", "ahn2023.thm1", "--timeout", "inf"], "positive number"),
    ("path-id", ["check", "../../etc/passwd"], "unknown claim"),
    ("shell-id", ["show", "ahn2023.thm1; rm -rf /"], "unknown claim"),
    ("report-proc", ["report", "ahn2023.thm1", *QUICK, "--out", "/proc/icl-verify"],
     "cannot write"),
]


@pytest.mark.parametrize("argv,needle", [pytest.param(a, n, id=i) for i, a, n in USAGE])
def test_hostile_input_exits_2_with_one_line_and_runs_nothing(capsys, argv, needle):
    code, out, err = run(capsys, argv)
    assert code == 2, (out, err)
    assert err.count("\n") == 1 and err.startswith("icl-verify: error:"), err
    assert needle in err, err
    assert "Traceback" not in err and len(err) < 1000
    # a code-execution attempt writes its canary file if it runs (none may)
    assert not glob.glob(CANARY.format("*"))


# (id, argv, the verdicts allowed, a needle of the reason)
VERDICTS = [
    ("tier-does-not-read-formula",
     ["check", "xie2025.thm4", *QUICK, "--tier", "numeric", "--set",
      "EWwwW=C**2*w*w.T + C*trace(w*w.T)*Identity(d)"], {"inconclusive"}, "does not read EWwwW"),
    ("hard-coded-heads",
     ["check", "xie2025.thm1", *QUICK, "--tier", "numeric,train", "--set", "H_sat=d"],
     {"inconclusive"}, "neither exhaustive nor certified"),
    ("search-below-supremum",
     ["check", "yang2024.lemma2", *QUICK, "--tier", "numeric", "--set", "C=99/100"],
     {"inconclusive"}, "neither exhaustive nor certified"),
    ("underflowed-gradient",
     ["check", "ahn2023.thm1", *QUICK, "--tier", "numeric,train", "--sigma", "diag:1,1e-300",
      "--set", "A_top=-U*Inverse((n+1)/n*Lambda + trace(Lambda)/n*Identity(d))*"
               "(2*Identity(d) - Lambda)*U.T"], {"inconclusive"}, "resolution"),
    ("timeout", ["check", "ahn2023.thm1", *QUICK, "--tier", "train", "--timeout", "0.5"],
     {"inconclusive"}, "timed out after 0.5 s"),
]


@pytest.mark.parametrize("argv,allowed,needle", [pytest.param(a, v, n, id=i)
                                                 for i, a, v, n in VERDICTS])
def test_restricted_tiers_and_bad_floats_are_never_verified(capsys, argv, allowed, needle):
    code, out, err = run(capsys, [*argv, "--json"])
    (v,) = json.loads(out)
    assert v["verdict"] in allowed and code == 1, v["reason"]
    assert needle in v["reason"]
    assert "Warning" not in err  # numpy's warnings are evidence, not noise on stderr
