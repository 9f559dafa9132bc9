"""``icl-verify moment``: output that sympify reads back, JSON shape, one-line errors."""
import json

import pytest
import sympy

from moments import wishart, wishart_sympy
from verify.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _plain(expr):
    return expr.subs({s: sympy.Symbol(s.name) for s in expr.free_symbols})


def test_trace_power_reads_back(capsys):
    code, out, err = run(capsys, "moment", "trace-power", "6")
    assert code == 0 and not err and len(out.strip().splitlines()) == 1
    got = sympy.sympify(out)
    assert {s.name for s in got.free_symbols} <= {"n"} | {f"p{j}" for j in range(1, 7)}
    assert sympy.expand(got - _plain(wishart_sympy.trace_moment(6))) == 0


def test_trace_power_at_identity_is_the_textbook_third_moment(capsys):
    code, out, _ = run(capsys, "moment", "trace-power", "3", "--identity")
    n, d = sympy.symbols("n d")
    want = n * d * (n**2 + d**2 + 3 * n * d + 3 * n + 3 * d + 4)
    assert code == 0 and sympy.expand(sympy.sympify(out) - want) == 0


def test_power_reads_back_with_sigma_powers(capsys):
    code, out, _ = run(capsys, "moment", "power", "2")
    n, p1, Sigma = sympy.symbols("n p1 Sigma")
    assert code == 0
    assert sympy.expand(sympy.sympify(out) - (n * (n + 1) * Sigma**2 + n * p1 * Sigma)) == 0


def test_json_and_given_n(capsys):
    code, out, _ = run(capsys, "moment", "power", "3", "--json", "--n", "4")
    data = json.loads(out)
    assert code == 0 and data["k"] == 3 and data["n"] == 4 and "not W/n" in data["convention"]
    expr = sympy.sympify(data["expression"])
    assert "n" not in {s.name for s in expr.free_symbols} and "Sigma" in data["symbols"]
    want = _plain(wishart_sympy.power_moment(3).subs(wishart.N, 4))
    assert sympy.expand(expr - want) == 0


BAD = [
    (["moment", "trace-power", "0"], "positive integer"),
    (["moment", "trace-power", "-2"], "positive integer"),
    (["moment", "trace-power", "abc"], "positive integer"),
    (["moment", "trace-power", "2.5"], "positive integer"),
    (["moment", "trace-power", "100000"], "too large"),
    (["moment", "power", "999", "--identity"], "too large"),
    (["moment", "trace-power", "3", "--n", "0"], "impossible"),
    (["moment", "trace-power", "3", "--n", "x"], "not an integer"),
    (["moment", "trace-power"], "required"),
    (["moment"], "choose"),
]


@pytest.mark.parametrize("argv,message", BAD)
def test_bad_input_is_a_one_line_usage_error(capsys, argv, message):
    code, out, err = run(capsys, *argv)
    assert code == 2 and not out
    assert len(err.strip().splitlines()) == 1 and message in err
