"""A Monte Carlo test that can fail a tier says so (``Finding(sampled=True)``), so that the
runner redraws its sample before it refutes: a module of the checks that builds confidence
intervals or z-statistics marks its findings, or says here why its intervals decide nothing."""
import pathlib
import re

ROOT = pathlib.Path(__file__).resolve().parents[2]
MARK = re.compile(r"\bsampled=(?!None\b|dict\()")  # Finding(sampled=...), not a budget's key
INTERVALS = re.compile(r"z_critical\(|\.agrees\(|\bestimate\(|streaming_estimate\(|\.interval\("
                       r"|_Z \* se")

# modules whose intervals never fail a tier on their own, and why
UNMARKED = {
    "proofs_checks/kit/looped_icl.py": "defines mc_loss: its callers test and mark",
    "proofs_checks/kit/trend.py": "decides on the standard errors its callers pass (none do)",
    "proofs_checks/ahn2023/proof_moments.py": "defines the Monte Carlo helpers of thm4_proof",
    "proofs_checks/xie2025/convexity_claims.py": "tests through common.mc_compare/mc_finding",
    "proofs_checks/xie2025/stationary_claims.py": "tests through kit gradient_z_finding",
}


def test_every_module_with_intervals_marks_its_sampled_findings():
    unmarked = []
    for path in sorted((ROOT / "proofs_checks").rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        text = path.read_text()
        if INTERVALS.search(text) and not MARK.search(text) and rel not in UNMARKED:
            unmarked.append(rel)
    assert not unmarked, unmarked
    for rel in UNMARKED:  # an entry for a module that no longer needs one goes
        assert INTERVALS.search((ROOT / rel).read_text()), rel


def test_marked_modules_draw_their_samples_through_the_context():
    """A module that marks sampled findings draws through ctx.mc_seed / ctx.mc_rng, or is a
    helper whose callers pass the seed (they are checked here in turn)."""
    helpers = {"proofs_checks/xie2025/common.py", "proofs_checks/yang2024/common.py",
               "proofs_checks/kit/pointwise.py", "proofs_checks/kit/stationary_float.py"}
    missing = []
    for path in sorted((ROOT / "proofs_checks").rglob("*.py")):
        rel = str(path.relative_to(ROOT))
        text = path.read_text()
        if MARK.search(text) and rel not in helpers and not re.search(r"ctx\.mc_(seed|rng)\(",
                                                                      text):
            missing.append(rel)
    assert not missing, missing
