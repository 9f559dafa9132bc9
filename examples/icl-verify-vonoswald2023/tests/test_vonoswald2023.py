"""The example paper plugin, installed: the registry finds it through its entry point, and
check, report, mutate and the pytest plugin work on it like on a built-in paper."""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from verify import registry
from verify.cli import main

HERE = Path(__file__).resolve().parents[1]


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_the_entry_point_registers_the_paper(capsys):
    assert registry.paper_modules()["vonoswald2023"] == "icl_verify_vonoswald2023"
    code, out, _ = run(capsys, "list", "--paper", "vonoswald2023", "--json")
    assert code == 0 and [r["id"] for r in json.loads(out)] == ["vonoswald2023.prop1"]
    code, out, _ = run(capsys, "list", "--paper", "vonoswald2023", "--definitions")
    assert code == 0 and "the learning rate" in out


def test_prop1_is_verified_and_a_wrong_projection_refuted(capsys):
    code, out, _ = run(capsys, "check", "vonoswald2023.prop1", "--budget", "quick", "--json")
    [v] = json.loads(out)
    assert code == 0 and v["verdict"] == "verified", v
    assert v["tiers"]["symbolic"]["status"] == "pass" and v["tiers"]["numeric"]["status"] == "pass"
    code, out, _ = run(capsys, "check", "vonoswald2023.prop1", "--budget", "quick", "--json",
                       "--set", "P=eta/(N+1)*Identity(d+m)")
    [v] = json.loads(out)
    assert code == 1 and v["verdict"] == "refuted"
    assert v["counterexample"]["tier"] == "symbolic" and v["counterexample"]["difference"] != "0"
    assert v["tiers"]["numeric"]["status"] == "fail"


@pytest.mark.parametrize("name,text", [("DeltaW", "-eta/2*G"), ("DeltaW", "eta*G"),
                                       ("L", "trace((W*X - Y).T*(W*X - Y))/N"),
                                       ("W_V", "BlockMatrix([[ZeroMatrix(d, d), ZeroMatrix(d, m)],"
                                               " [W0, Identity(m)]])")])
def test_every_wrong_formula_is_refuted(capsys, name, text):
    code, out, _ = run(capsys, "check", "vonoswald2023.prop1", "--budget", "quick", "--json",
                       "--tier", "symbolic", "--set", f"{name}={text}")
    assert code == 1 and json.loads(out)[0]["verdict"] == "refuted"


def test_report_writes_the_claim(capsys, tmp_path):
    code, out, _ = run(capsys, "report", "vonoswald2023.prop1", "--budget", "quick",
                       "--out", str(tmp_path / "r"))
    assert code == 0
    tex = (tmp_path / "r" / "report.tex").read_text()
    assert "vonoswald2023" in tex and "gradient" in tex


def test_mutate_kills_every_mutant_that_is_not_a_true_statement(capsys):
    """Every non-equivalent mutant is killed; the four that survive the checks change a row of
    W_K or W_Q that the other's zero block annihilates. The kit's identity_truth judges them
    true (the exact identity holds with them at the check's sizes and one more), and block
    algebra proves it for every d and m: the model reads W_K, W_Q only through W_K^T W_Q."""
    import sympy

    from icl_verify_vonoswald2023 import PROP1

    code, out, _ = run(capsys, "mutate", "vonoswald2023.prop1", "--json")
    [report] = json.loads(out)["claims"]
    assert code == 0 and json.loads(out)["totals"]["survived"] == 0
    counts = {f["formula"]: f["true"] for f in report["formulas"]}
    assert {k: v for k, v in counts.items() if v} == {"W_K": 2, "W_Q": 2}, counts
    wk, wq = PROP1.formula("W_K"), PROP1.formula("W_Q")
    product = sympy.block_collapse(wk.parse().T * wq.parse())
    for name in ("W_K", "W_Q"):
        for text in _true_texts(out, name):
            k = wk.parse(text) if name == "W_K" else wk.parse()
            q = wq.parse(text) if name == "W_Q" else wq.parse()
            assert sympy.block_collapse(k.T * q) == product, text


def _true_texts(out: str, name: str) -> list[str]:
    data = json.loads(out)["claims"][0]
    texts = []
    for f in data["formulas"]:
        if f["formula"] != name:
            continue
        texts += [m["text"] for m in f["mutant_results"]
                  if m["status"] == "true" and m["equivalence"]["kind"] == "true"]
    assert texts, f"no true mutants of {name} in the JSON"
    return texts


def test_the_pytest_plugin_checks_the_paper(tmp_path):
    env = {**os.environ}
    cmd = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:xdist",
           f"--rootdir={tmp_path}", "--icl-claims", "--icl-paper", "vonoswald2023",
           "--icl-budget", "quick", "--icl-expected", str(HERE / "expected_verdicts.toml"),
           str(tmp_path)]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "1 passed" in proc.stdout
