"""--size cannot move a claim outside the relations between sizes it assumes: a theorem is not
refuted outside its hypothesis (yang2024's Thm. 2 at H = 1 < N was once 'refuted' by training
that Assumption 2 rules out).  Refused with one line and exit status 2, before any work."""
from dataclasses import dataclass, field

import pytest

from verify.claim import Claim, TierResult
from verify.cli import main
from verify.errors import UsageError
from verify.runner import check_claim


@dataclass(frozen=True)
class _Setting:
    sizes: dict = field(default_factory=lambda: {b: {"H": 6, "N": 4, "n": 3, "L": 2}
                                                 for b in ("quick", "default", "paper")})


def _claim(**ranges) -> Claim:
    return Claim(id="kit0000.thm1", title="t", paper="kit0000", statement="s", assumptions=(),
                 formulas=(), checks={"symbolic": lambda ctx: TierResult("pass")},
                 setting=_Setting(), **ranges)


def test_a_size_outside_a_size_range_is_refused():
    claim = _claim(size_ranges=("H >= N",))
    with pytest.raises(UsageError, match=r"assumes H >= N; at --budget quick with --size H=2 "
                                         r"the sizes are H = 2, N = 4"):
        check_claim(claim, sizes={"H": 2})
    assert check_claim(claim, sizes={"H": 4}).verdict == "verified"
    assert check_claim(claim, sizes={"n": 1}).verdict == "verified"  # the range is untouched


def test_a_range_the_settings_own_sizes_do_not_meet_is_left_to_the_checks():
    """Such a claim is not checked at its setting's sizes for that relation (gatmiry2024's
    n >= 16 L^2 d^2, decided symbolically in n): --size there is not refused."""
    claim = _claim(ranges=("n >= 16*L**2",))
    assert check_claim(claim, sizes={"n": 5}).verdict == "verified"


@pytest.mark.parametrize("claim_id", ["yang2024.thm1", "yang2024.thm2", "yang2024.eq43b"])
def test_yang2024_under_assumption_2_refuses_fewer_heads_than_prompts(capsys, claim_id):
    code = main(["check", claim_id, "--budget", "quick", "--size", "H=1"])
    _, err = capsys.readouterr()
    assert code == 2 and len(err.strip().splitlines()) == 1
    assert f"{claim_id} assumes H >= N" in err


def test_a_verdict_says_the_sizes_and_covariance_it_was_asked_at():
    """A claim verified at --size n=1 is verified there only (ahn2023 eq. (17)'s dropped 1/n is
    right at n = 1): the terminal and the JSON say what was asked."""
    from verify.output import check_table
    from verify.sigma import parse_sigma

    v = check_claim(_claim(), sizes={"n": 1}, sigma=parse_sigma("diag:2,1/2"))
    assert v.as_dict()["sizes"] == {"n": 1} and v.as_dict()["sigma"] == "diag:2,1/2"
    assert "kit0000.thm1: " in check_table([v]) and \
        "(at --size n=1 --sigma diag:2,1/2)" in check_table([v])
    plain = check_claim(_claim())
    assert plain.as_dict()["sizes"] == {} and plain.as_dict()["sigma"] is None
    assert "(at " not in check_table([plain])
