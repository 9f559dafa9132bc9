"""Every claim at the smallest sizes its setting accepts (d = 1, n = 1): a check may be
undecided there, but it must not crash (an engine error is reported, never a verdict, and is a
bug all the same: `--size n=1` once crashed ahn2023.lemma2's train tier through numpy's
printing of MatMul(1, X)).  Slow: every claim runs twice; `.ci/slow` runs it."""
import pytest

from verify.errors import UsageError
from verify.registry import all_claims
from verify.runner import check_claim, validate


def _accepting(name: str, value: int) -> list[str]:
    out = []
    for claim in all_claims():
        try:
            validate(claim, {name: value}, None, "quick")
        except UsageError:
            continue
        out.append(claim.id)
    return out


CASES = [(cid, "d", 1) for cid in _accepting("d", 1)] + \
        [(cid, "n", 1) for cid in _accepting("n", 1)]


@pytest.mark.slow
@pytest.mark.parametrize("claim_id, name, value", CASES)
def test_no_tier_crashes_at_the_smallest_sizes(claim_id, name, value):
    from verify.registry import find

    try:
        v = check_claim(find(claim_id), budget="quick", sizes={name: value}, timeout=300)
    except UsageError:  # a conflict the setting finds only with the instance (a fixed Sigma)
        return
    crashed = {t: r.evidence["exception"] for t, r in v.tiers.items()
               if "exception" in r.evidence}
    assert not crashed, crashed
