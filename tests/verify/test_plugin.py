"""The pytest plugin: claims as test items against the user's expected verdicts.

The plugin runs in a separate pytest process (as a user's CI would run it), loaded with
``-p verify.pytest_plugin``; the ``pytest11`` entry point has the same name, so the two are one
plugin when the package is installed.
"""
import os
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from verify import registry
from verify.pytest_plugin import VerdictChanged, _settings, describe_change, read_expected
from verify.runner import check_claim

ROOT = Path(__file__).resolve().parents[2]
EXPECTED = ROOT / "expected_verdicts.toml"


def run_pytest(tmp_path, *args, timeout=600):
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    cmd = [sys.executable, "-m", "pytest", "-p", "verify.pytest_plugin", "-p", "no:cacheprovider",
           f"--rootdir={tmp_path}", *args]
    proc = subprocess.run(cmd, cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=timeout)
    return proc.returncode, proc.stdout + proc.stderr


def run_inprocess(capsys, tmp_path, *args):
    """pytest in this process (no interpreter start-up): for the plugin's failure reports."""
    code = pytest.main(["-p", "verify.pytest_plugin", "-p", "no:cacheprovider",
                        f"--rootdir={tmp_path}", *args, str(tmp_path)])
    out, err = capsys.readouterr()
    return int(code), out + err


def test_without_icl_claims_the_plugin_does_nothing(tmp_path):
    (tmp_path / "test_plain.py").write_text(
        "import sys\n"
        "def test_plain():\n"
        "    assert 'verify.registry' not in sys.modules and 'proofs_checks' not in sys.modules\n")
    code, out = run_pytest(tmp_path, "-q", str(tmp_path))
    assert code == 0, out
    assert "1 passed" in out and "claim" not in out


def test_expected_file_covers_every_claim():
    expected = read_expected(EXPECTED)
    built_in = {c.id for p in registry.BUILT_IN for c in registry.by_paper(p)}
    missing = sorted(built_in - set(expected))
    assert not missing, f"add to {EXPECTED.name}: " + ", ".join(f'"{m}" = "<verdict>"'
                                                                 for m in missing)


@pytest.mark.long_pole
def test_real_registry_matches_the_repos_expected_verdicts(tmp_path):
    """What CI runs: every claim, quick budget, the exact tiers, as two pytest processes side by
    side (CI has 2 cores): gatmiry2024 (about 2 minutes alone) and the other three papers."""
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    heavy = "gatmiry2024"
    # the built-in papers (a paper plugin installed beside them keeps its own expected file)
    groups = [[heavy], [p for p in registry.BUILT_IN if p != heavy]]
    procs = []
    for i, group in enumerate(groups):
        root = tmp_path / str(i)
        root.mkdir()
        cmd = [sys.executable, "-m", "pytest", "-p", "verify.pytest_plugin", "-p",
               "no:cacheprovider", f"--rootdir={root}", "--icl-claims", "--icl-budget", "quick",
               "--icl-tier", "symbolic,numeric", f"--icl-expected={EXPECTED}", "-v",
               *[arg for p in group for arg in ("--icl-paper", p)], str(root)]
        procs.append(subprocess.Popen(cmd, cwd=root, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.STDOUT, text=True))
    try:
        results = [(proc.communicate(timeout=900)[0], proc.returncode) for proc in procs]
    finally:
        for proc in procs:
            proc.kill()
    for group, (out, code) in zip(groups, results):
        claims = [c for p in group for c in registry.by_paper(p)]
        exact = [c for c in claims if {"symbolic", "numeric"} & set(c.tiers)]
        assert code == 0, out
        assert f"{len(exact)} passed" in out
        for c in claims:  # train-only claims (ahn2023 figures) are skipped
            assert f"{c.id} {'PASSED' if c in exact else 'SKIPPED'}" in out
    assert sum(len(registry.by_paper(p)) for g in groups for p in g) == sum(
        len(registry.by_paper(p)) for p in registry.BUILT_IN)


def test_changed_or_missing_verdicts_fail_and_print_the_evidence(capsys, tmp_path):
    expected = tmp_path / "mine.toml"
    expected.write_text('[ahn2023]\nlemma2 = {verdict = "refuted", '
                        'note = "pretend the lemma was known to fail"}\n')
    code, out = run_inprocess(capsys, tmp_path, "--icl-claims", "--icl-paper", "ahn2023",
                              "--icl-budget", "quick", "--icl-tier", "numeric",
                              f"--icl-expected={expected}")
    assert code == 1, out
    numeric = [c for c in registry.by_paper("ahn2023") if "numeric" in c.tiers]
    assert f"{len(numeric)} failed" in out  # lemma2 changed, every other one has no line
    # a changed verdict: what changed, each tier, and how to reproduce it
    assert "ahn2023.lemma2: expected refuted, computed verified" in out
    assert "numeric: pass" in out
    assert "reproduce: icl-verify check ahn2023.lemma2 --tier numeric --budget quick" in out
    # a claim the file does not mention: the line to add
    assert "mine.toml has no expected verdict for it; add the line" in out
    # the summary lists the computed verdicts, ready to paste
    assert '"ahn2023.lemma2" = "verified"' in out and '"ahn2023.thm1" = "verified"' in out


def test_failure_text_shows_the_counterexample():
    # a real refuted verdict: eq. (11) with a doubled step
    v = check_claim(registry.find("ahn2023.lemma2"), tiers=("numeric",), budget="quick",
                    overrides={"update": "w + 2*A*grad"})
    assert v.verdict == "refuted"
    settings = SimpleNamespace(tiers=("numeric",), budget="quick", seed=0, device="auto",
                               expected_path=EXPECTED)
    text = describe_change(VerdictChanged(v, "verified"), settings)
    assert text.startswith("ahn2023.lemma2: expected verified, computed refuted")
    assert "counterexample: {" in text and '"claimed"' in text and '"model"' in text
    assert "numeric: fail (identity_float64" in text


def options(tmp_path, **given):
    values = {"icl_budget": "quick", "icl_tier": "numeric", "icl_seed": "0",
              "icl_device": "cpu", "icl_paper": [], "icl_expected": None, **given}
    return SimpleNamespace(getoption=values.__getitem__, rootpath=tmp_path)


def _toml(tmp_path, text):
    path = tmp_path / "e.toml"
    path.write_text(text)
    return str(path)


BAD_OPTIONS = [
    ({"icl_budget": "huge"}, "budgets are"),
    ({"icl_tier": "symbolic,magic"}, "tiers are"),
    ({"icl_tier": ","}, "tiers are"),
    ({"icl_seed": "-1"}, "non-negative"),
    ({"icl_device": "tpu"}, "unknown device"),
    ({"icl_paper": ["nobody2020"]}, "unknown paper"),
    ({"icl_expected": "no/such/file.toml"}, "no such file"),
    ({"icl_expected": lambda p: _toml(p, "x = \n")}, "not valid TOML"),
    ({"icl_expected": lambda p: _toml(p, '"nosuch.thm1" = "verified"\n')}, "unknown claim"),
    ({"icl_expected": lambda p: _toml(p, '"ahn2023.thm1" = "fine"\n')}, "is not a verdict"),
]


@pytest.mark.parametrize("given,needle", BAD_OPTIONS)
def test_bad_plugin_options_are_usage_errors(tmp_path, given, needle):
    given = {k: (v(tmp_path) if callable(v) else v) for k, v in given.items()}
    with pytest.raises(pytest.UsageError, match=needle) as info:
        _settings(options(tmp_path, **given))
    assert "\n" not in str(info.value) and str(info.value).startswith("icl-verify: ")


def test_bad_option_exits_with_pytests_usage_status(capsys, tmp_path):
    code, out = run_inprocess(capsys, tmp_path, "--icl-claims", "--icl-budget", "huge")
    assert code == 4 and "ERROR: icl-verify: --icl-budget 'huge': budgets are" in out
    assert "Traceback" not in out
