"""The CLI contract: commands, exit statuses, JSON shape, one-line errors for bad input."""
import json

import pytest
import torch

from verify.cli import main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_list_and_show(capsys):
    code, out, _ = run(capsys, "list", "--json")
    rows = json.loads(out)
    assert code == 0 and {"ahn2023.thm1", "ahn2023.lemma2"} <= {r["id"] for r in rows}
    assert all(set(r) >= {"id", "title", "tiers"} for r in rows)
    code, out, _ = run(capsys, "show", "ahn2023.thm1", "--json")
    claim = json.loads(out)
    assert code == 0 and claim["formulas"]
    import sympy

    from verify.formulas import FormulaSymbol

    for f in claim["formulas"]:  # every expression reads back with its declared symbols
        syms = tuple(FormulaSymbol(s["name"], s["kind"], tuple(s["shape"]) if s.get("shape") else None)
                     for s in f["symbols"])
        local = {s.name: s.sympy() for s in syms}
        assert isinstance(sympy.sympify(f["expression"], locals=local), sympy.Basic)


BAD = [
    (["check", "nosuch.claim"], "unknown claim"),
    (["check", "ahn2023.thm99"], "unknown claim"),
    (["check", "--paper", "nobody2020"], "unknown paper"),
    (["check"], "name claims"),
    (["show", "nosuch.claim"], "unknown claim"),
    (["check", "ahn2023.thm1", "--set", "A_iso=1/("], "cannot read"),
    (["check", "ahn2023.thm1", "--set", "A_iso=q+1"], "does not have"),
    (["check", "ahn2023.thm1", "--set", "A_top=U*U*U.T+1"], "adds a matrix and a scalar"),
    (["check", "ahn2023.thm1", "--set", "A_top=n"], "is a scalar"),
    (["check", "ahn2023.thm1", "--set", "A_iso=Identity(d)"], "is a matrix"),
    (["check", "ahn2023.thm1", "--set", "nosuch=1"], "no selected claim"),
    (["check", "ahn2023.thm1", "--set", "A_iso"], "NAME=VALUE"),
    (["check", "ahn2023.thm1", "--set", "A_iso=__import__('os')"], "not an allowed function"),
    (["check", "ahn2023.thm1", "--size", "n=0"], "impossible"),
    (["check", "ahn2023.thm1", "--size", "n=-3"], "impossible"),
    (["check", "ahn2023.thm1", "--size", "n=abc"], "not an integer"),
    (["check", "ahn2023.thm1", "--size", "q=3"], "has sizes"),
    (["check", "ahn2023.thm1", "--sigma", "[[1,2],[2,1]]"], "not positive definite"),
    (["check", "ahn2023.thm1", "--sigma", "[[1,2],[3,1]]"], "not symmetric"),
    (["check", "ahn2023.thm1", "--sigma", "diag:1,-1"], "positive"),
    (["check", "ahn2023.thm1", "--sigma", "banana"], "--sigma"),
    (["check", "ahn2023.thm1", "--budget", "huge"], "budgets are"),
    (["check", "ahn2023.thm1", "--tier", "magic"], "tiers are"),
    (["check", "ahn2023.thm1", "--device", "tpu"], "unknown device"),
    (["check", "ahn2023.thm1", "--seed", "-1"], "non-negative"),
    (["frobnicate"], "invalid choice"),
    # formulas that read but are not well-typed or not finite
    (["check", "ahn2023.thm1", "--set", "A_iso=1/0"], "not finite"),
    (["check", "ahn2023.thm1", "--set", "b_y=nan"], "not finite"),
    (["check", "ahn2023.lemma2", "--set", "R=(w - w_star.T)*X*X.T*(w - w_star)/(2*n)"],
     "ill-typed"),
    (["check", "ahn2023.lemma2", "--set", "prediction=-x_q*w"], "ill-typed"),
    (["check", "ahn2023.lemma2", "--set", "R=trace(X)"], "ill-typed"),
    (["check", "ahn2023.lemma2", "--set", "update=w + A*grad + x_q"], "does not have"),
    (["check", "ahn2023.thm1", "--sigma", "diag:1,nan"], "--sigma"),
    (["check", "ahn2023.thm1", "--sigma", "diag:"], "--sigma"),
    (["check", "ahn2023.thm1", "--sigma", "[[1,0],[0,0]]"], "not positive definite"),
    (["check", "ahn2023.thm1", "--size", "d=3", "--sigma", "diag:1,2"], "conflicts"),
    (["check", "ahn2023.thm1", "--seed", "1e3"], "not an integer"),
    (["check", "ahn2023.thm1", "--tier", ""], "tiers are"),
    (["check", "ahn2023.thm1", "--tier", "symbolic,,magic"], "tiers are"),
    (["check", "ahn2023.thm1", "ahn2023.nosuch1"], "unknown claim"),
    # list and show
    (["list", "--paper", "nobody2020"], "unknown paper"),
    (["list", "--paper", "ahn", "--json"], "did you mean ahn2023"),
    (["show"], "required: id"),
    (["show", "ahn2023"], "unknown claim"),
    # mutate shares the selection and run options, and validates before any work
    (["mutate"], "name claims"),
    (["check", "gatmiry2024.lemma_a6", "--set",
      "lhs=trace((Identity(d) - A_half*Sigma*A_half)**(2*d))"], "exponents here may only use L"),
    (["mutate", "nosuch.claim"], "unknown claim"),
    (["mutate", "--paper", "nobody2020"], "unknown paper"),
    (["mutate", "ahn2023.thm1", "--formula", "nosuch"], "no selected claim has a formula"),
    (["mutate", "ahn2023.thm1", "--tier", "magic"], "tiers are"),
    (["mutate", "ahn2023.thm1", "--budget", "huge"], "budgets are"),
    (["mutate", "ahn2023.thm1", "--device", "tpu"], "unknown device"),
    (["mutate", "ahn2023.thm1", "--size", "n=0"], "impossible"),
    (["mutate", "ahn2023.thm1", "--size", "q=3"], "has sizes"),
    (["mutate", "ahn2023.thm1", "--sigma", "[[1,2],[2,1]]"], "not positive definite"),
    (["mutate", "ahn2023.thm1", "--seed", "x"], "not an integer"),
    (["mutate", "ahn2023.thm1", "--mutant-timeout", "0"], "positive number of seconds"),
    (["mutate", "ahn2023.thm1", "--mutant-timeout", "nan"], "positive number of seconds"),
    (["mutate", "ahn2023.thm1", "--jsonl", "/nonexistent/dir/run.jsonl"], "cannot write there"),
]


@pytest.mark.parametrize("argv,needle", BAD)
def test_bad_input_exits_2_with_one_line(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert err.count("\n") == 1 and err.startswith("icl-verify: error:")
    assert needle in err
    assert "Traceback" not in err


@pytest.mark.parametrize("command", ["check", "mutate"])
def test_cuda_without_gpu_exits_2(capsys, monkeypatch, command):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)  # the same on a GPU machine
    code, _, err = run(capsys, command, "ahn2023.lemma2", "--device", "cuda")
    assert code == 2 and "no CUDA GPU" in err and err.count("\n") == 1


@pytest.mark.parametrize("where", ["under_a_file", "a_file"])
def test_report_to_an_unwritable_out_exits_2(capsys, tmp_path, where):
    blocker = tmp_path / "not_a_directory"
    blocker.write_text("")
    out = blocker / "report" if where == "under_a_file" else blocker
    code, _, err = run(capsys, "report", "ahn2023.thm1", "--out", str(out))
    assert code == 2 and err.count("\n") == 1 and err.startswith("icl-verify: error:")
    assert "--out" in err and str(out) in err and "Traceback" not in err


def test_check_json_shape_and_wrong_constant_is_refuted(capsys):
    code, out, _ = run(capsys, "check", "ahn2023.thm1", "--tier", "symbolic", "--json", "--set",
                       "A_iso=-1/((n-1)/n + (d+3)/n)")
    assert code == 1
    (v,) = json.loads(out)
    assert set(v) >= {"claim", "verdict", "tiers", "counterexample", "correction", "seed"}
    assert v["verdict"] == "refuted" and v["counterexample"]["check"] == "isotropic_case"
    assert v["tiers"]["symbolic"]["status"] == "fail"
    assert set(v["tiers"]["symbolic"]) >= {"status", "evidence", "seconds"}


def test_check_prints_how_near_a_bound_came_to_failing(capsys):
    """A verified bound and a corrected one: the text output names the closest approach (the
    comparison nearest to failing, as measured / allowed) of the claim, or of its correction."""
    code, out, _ = run(capsys, "check", "gatmiry2024.thm4_4", "gatmiry2024.thm_a11", "--tier",
                       "symbolic", "--budget", "quick")
    assert code == 0
    assert "gatmiry2024.thm4_4: verified\n" in out
    assert "  closest approach: 0.042 of the bound (max_i |lambda_i" in out
    assert ("the correction's closest approach: 0.0156 of the bound (the named bound "
            "(rhs) / ||grad L(A, 0)||_F^2; symbolic") in out


def test_check_prints_what_each_tier_decided_on_and_quiet_prints_the_table(capsys):
    """Under a verified claim, one line per tier with the numbers it decided on; a refuted one
    shows its counterexample as aligned lines, not a JSON line; -q prints the table only."""
    code, out, _ = run(capsys, "check", "ahn2023.thm1", "--tier", "symbolic,numeric",
                       "--budget", "quick")
    assert code == 0
    assert "  symbolic  the prediction is b^T C A x_q exactly" in out
    assert "gradient max |z| = " in out
    code, out, _ = run(capsys, "check", "ahn2023.thm1", "--tier", "symbolic", "--budget", "quick",
                       "--set", "A_top=-U*Inverse((n+2)/n*Lambda + trace(Lambda)/n*Identity(d))*U.T")
    assert code == 1 and "  counterexample (symbolic):" in out
    lines = out.splitlines()
    assert any(l.startswith("    paper_A_top ") and l.endswith(" -21/61") for l in lines)
    assert any(l.startswith("    instance Sigma ") for l in lines) and "{" not in out
    code, out, _ = run(capsys, "check", "ahn2023.thm1", "--tier", "symbolic", "--budget", "quick",
                       "-q")
    assert code == 0 and len(out.strip().splitlines()) == 3


def test_check_verified_exits_0(capsys):
    code, out, _ = run(capsys, "check", "ahn2023.lemma2", "--tier", "symbolic,numeric",
                       "--budget", "quick", "--json")
    (v,) = json.loads(out)
    assert code == 0 and v["verdict"] == "verified"
    found = v["tiers"]["numeric"]["evidence"]["identity_float64"]
    assert found["ok"] and found["max_difference"] <= found["allowance"] < 1e-10


def test_paper_repeats_and_keeps_the_order_given(capsys):
    code, out, _ = run(capsys, "check", "--paper", "vonoswald2023", "--paper", "ahn2023",
                       "--tier", "symbolic", "--budget", "quick", "--json")
    ids = [v["claim"] for v in json.loads(out)]
    assert ids[0] == "vonoswald2023.prop1" and "ahn2023.thm1" in ids
