"""gatmiry2024, Sec. 3.7 (line 192): the loss landscape in A is non-convex (L >= 2)."""
import pytest

from verify.registry import find
from verify.runner import check_claim

CID = "gatmiry2024.thm3_3_nonconvex"


def verdict(**overrides):
    return check_claim(find(CID), tiers=("symbolic", "numeric"), overrides=overrides,
                       budget="quick", seed=0)


def test_the_loss_is_non_convex_for_two_loops():
    v = verdict()
    assert v.verdict == "verified", v.reason
    rows = v.as_dict()["tiers"]["symbolic"]["evidence"]["midpoint_convexity"]["rows"]
    two = next(r for r in rows if r["L"] == 2)
    assert two["nonconvex"] is True and two["negative_for_n_from"] == 5


@pytest.mark.parametrize("text", ["L >= 1", "L >= 0", "L <= 2"])
def test_a_scope_with_one_loop_is_refuted(text):
    # at L = 1 the loss is a convex quadratic (Hessian 2 (n + 3) / n I)
    assert verdict(scope=text).verdict == "refuted"


def test_the_midpoint_certificate_is_exact():
    from proofs_checks.gatmiry2024.landscape import midpoint_gap
    from proofs_checks.kit.looped_icl import N
    gap = midpoint_gap(2)
    assert gap.subs(N, 4) > 0 and all(gap.subs(N, n) < 0 for n in (5, 10, 100, 10 ** 6))
