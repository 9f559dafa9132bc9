"""--sigma is honoured or refused, never ignored: a claim whose checks choose their own
covariance exits 2 with one line before any work, and a tier that never reads the asked
covariance (and does not declare itself symbolic in it) decides nothing."""
import pytest

from verify.claim import Claim, TierResult
from verify.cli import main
from verify.runner import check_claim
from verify.sigma import EVERY_SIGMA, SigmaReads, parse_sigma


@pytest.mark.parametrize("claim_id", ["gatmiry2024.lemma_a3", "ahn2023.thm3", "ahn2023.lemma7",
                                      "vonoswald2023.prop1"])
def test_a_claim_that_fixes_sigma_refuses_it_in_one_line(capsys, claim_id):
    code = main(["check", claim_id, "--sigma", "diag:10,1/10", "--size", "d=2"])
    _, err = capsys.readouterr()
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"{claim_id} takes no --sigma" in err


def test_reading_the_spec_is_recorded_and_a_none_test_or_a_look_at_the_kind_is_not():
    s = SigmaReads(parse_sigma("diag:2,1/2"))
    assert s is not None and not s.read
    assert s.kind == "diag" and not s.read  # branching on the kind checks no covariance
    assert s.values and s.read
    assert SigmaReads(parse_sigma("identity")).describe() == "identity"
    assert s == parse_sigma("diag:2,1/2")


def _claim(check) -> Claim:
    return Claim(id="kit0000.lemma1", title="t", paper="kit0000", statement="s",
                 assumptions=(), formulas=(), checks={"symbolic": check})


def _ignores(ctx):
    return TierResult("pass")


def _reads(ctx):
    return TierResult("pass", evidence={"sigma": ctx.sigma.describe()})


def _looks_at_the_kind_only(ctx):
    """Branches on the kind, then checks a covariance of its own (a --sigma matrix skipped)."""
    return TierResult("pass", evidence={"own": ctx.sigma.kind != "matrix"})


def _symbolic_in_sigma(ctx):
    return TierResult("pass", evidence={"sigma_scope": EVERY_SIGMA})


def test_a_tier_that_never_reads_the_asked_sigma_decides_nothing():
    sigma = parse_sigma("diag:2,1/2")
    v = check_claim(_claim(_ignores), tiers=("symbolic",), sigma=sigma)
    assert v.verdict == "inconclusive"
    tier = v.tiers["symbolic"]
    assert tier.status == "skipped" and "does not read --sigma" in tier.reason
    assert tier.evidence["status_at_its_own_covariance"] == "pass"
    assert check_claim(_claim(_reads), tiers=("symbolic",), sigma=sigma).verdict == "verified"
    assert check_claim(_claim(_looks_at_the_kind_only), tiers=("symbolic",),
                       sigma=parse_sigma("[[2,1],[1,2]]")).verdict == "inconclusive"
    assert check_claim(_claim(_symbolic_in_sigma), tiers=("symbolic",),
                       sigma=sigma).verdict == "verified"
    assert check_claim(_claim(_ignores), tiers=("symbolic",)).verdict == "verified"


@pytest.mark.parametrize("sigma", ["[[2,1],[1,2]]", "[[3,1,0],[1,3,1/3],[0,1/3,1]]"])
def test_a_sigma_matrix_is_checked_not_refuted_by_the_engine(sigma):
    """Theorem 1 holds for every Sigma > 0; a --sigma matrix (eigenvalues algebraic, not
    rational) once made eq. (8) 'cannot be formed' and the true theorem came out refuted."""
    from verify.registry import find

    v = check_claim(find("ahn2023.thm1"), budget="quick", sigma=parse_sigma(sigma))
    assert v.verdict == "verified", v.reason
    assert v.tiers["numeric"].status == "pass" and v.tiers["train"].status == "pass"
    # the symbolic tier's exact instances are rational (U, Lambda): not the asked matrix
    assert v.tiers["symbolic"].status == "skipped"
