"""yang2024 eqs. (75)-(77): the noise terms of Lemma 5's proof, and the noise variance the sentence
after (77) states."""
import pytest

from proofs_checks.yang2024.loss_expansion import noise_terms
from verify.registry import find
from verify.runner import check_claim


def run(**overrides):
    return check_claim(find("yang2024.eq77"), tiers=("symbolic", "numeric"), budget="quick", seed=0,
                       device="cpu", overrides=overrides)


def test_the_derived_cross_term_vanishes_and_the_noise_variance_is_tau():
    nt = noise_terms()
    assert nt.cross_prompt.is_zero() and nt.cross_query.is_zero()
    assert str(nt.entry_variance) == "tau"


def test_77_holds_and_the_tau_squared_sentence_is_corrected():
    v = run()
    assert v.verdict == "corrected", v.as_dict()
    sym = v.tiers["symbolic"].evidence
    assert all(sym[n]["ok"] for n in ("cross_76", "noise_prompt", "noise_query", "L_prompt", "lambda_average_75"))
    assert sym["noise_variance"]["ok"] is False
    assert v.correction["formulas"] == {"noise_var": "tau"}


@pytest.mark.parametrize("name,wrong", [
    ("noise_prompt", "m*tau*(trace(Ahat_k.T*Ahat_k) + 1) - m*tau*trace(e_k.T*Ahat_k)"),
    ("noise_query", "m*tau*trace(Ahat_k.T*Ahat_k)"),
    ("cross", "1"),
    ("L_prompt", "(trace((Z*Ahat_k - Z*e_k).T*(Z*Ahat_k - Z*e_k)) + tau*trace((Ahat_k - e_k).T*(Ahat_k - e_k)))/2"),
])
def test_wrong_noise_terms_are_refuted(name, wrong):
    v = run(noise_var="tau", **{name: wrong})
    assert v.verdict == "refuted", (name, v.as_dict())
