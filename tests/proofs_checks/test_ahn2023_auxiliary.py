"""ahn2023 App. C: the layer dynamics (54), the label dynamics of Lemma 2's proof (56)-(58),
(60), (61) and the query's update before (63), against the forward pass."""
import pytest

from verify.registry import find
from verify.runner import check_claim


def run(claim_id, tiers=("symbolic", "numeric"), **overrides):
    return check_claim(find(claim_id), tiers=tiers, overrides=overrides, budget="quick", seed=0)


@pytest.mark.parametrize("claim_id", ["ahn2023.eq54", "ahn2023.eq56", "ahn2023.eq60"])
def test_dynamics_hold(claim_id):
    assert run(claim_id).verdict == "verified"


def test_61_uses_the_query_where_the_context_example_belongs():
    v = run("ahn2023.eq61")
    assert v.verdict == "corrected", v.as_dict()
    assert run("ahn2023.eq61", **find("ahn2023.eq61").correction.formulas).verdict == "verified"


@pytest.mark.parametrize("claim_id, override", [
    ("ahn2023.eq54", {"X_next": "X_i + B*X_i*M*X_i.T*A*X_i"}),          # the 1/n dropped
    ("ahn2023.eq54", {"Y_next": "Y_i + Y_i*X_i.T*A*X_i/n"}),            # the mask dropped
    ("ahn2023.eq56", {"ctx_next": "Ybar + (Xbar.T*A*Xbar*Ybar.T).T"}),
    ("ahn2023.eq56", {"q_next": "y_q + x_q.T*A*Xbar*Ybar.T/n + y_q"}),
    ("ahn2023.eq60", {"y_60": "theta.T*x_i"}),
    ("ahn2023.eq60", {"q_line3": "y_q + (A*Xbar*Xbar.T*(theta - w_star)).T*x_q/n"}),
    ("ahn2023.eq60", {"q_line2": "y_q + (A*Xbar*(Xbar.T*theta)).T*x_q/n"}),
])
def test_wrong_formula_is_refuted(claim_id, override):
    v = run(claim_id, **override)
    assert v.verdict == "refuted", v.as_dict()
