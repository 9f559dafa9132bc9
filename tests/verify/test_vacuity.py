"""Vacuity: a verified bound says where its conclusion is informative, from the formulas as read;
the finding is about usefulness and leaves the verdict alone."""
import sympy

from verify.registry import find
from verify.runner import check_claim
from verify.vacuity import Vacuity, vacuity

n, L = sympy.symbols("n L", positive=True)


def _parse(text):
    return {"c < 1": sympy.Symbol("c") < 1}[text]


def test_the_smallest_informative_size_is_found_exactly():
    # c = 8 / sqrt(n) < 1 exactly when n > 64; the hypothesis admits n >= 4
    formulas = {"hypothesis": n >= 4, "c": 8 / sympy.sqrt(n)}
    out = vacuity(Vacuity("c < 1", "the bound is informative", fixed={}), formulas, _parse)
    assert out["status"] == "informative" and out["rows"][0]["smallest_informative"] == 65
    assert out["rows"][0]["smallest_admitted"] == 4


def test_a_conclusion_that_never_says_anything_is_vacuous():
    formulas = {"hypothesis": n >= 4, "c": 2 + 1 / n}
    out = vacuity(Vacuity("c < 1", "the bound is informative", fixed={"L": (1, 2)}), formulas,
                  _parse)
    assert out["status"] == "vacuous" and "at no n" in out["where"]


def test_gatmiry_thm3_2_is_informative_only_from_n_262145_at_l_1_d_1():
    # by hand: c = 8 (8 L d^2 / sqrt(n))^{1/(2L)} < 1 at L = d = 1 iff sqrt(n) > 512
    v = check_claim(find("gatmiry2024.thm3_2"), tiers=("symbolic",), budget="quick")
    assert v.verdict == "verified" and v.vacuous["status"] == "informative"
    row = next(r for r in v.vacuous["rows"] if r["L"] == 1 and r["d"] == 1)
    assert row["smallest_informative"] == 262145 and row["smallest_admitted"] == 1024
    assert row["at_smallest_admitted"]["c"].startswith("4.0")
    # a larger c is still a true bound, and now it never says anything
    v = check_claim(find("gatmiry2024.thm3_2"), tiers=("symbolic",), budget="quick",
                    overrides={"c": "8*delta*d**(1/(2*L)) + 1"})
    assert v.verdict == "verified" and v.vacuous["status"] == "vacuous"
    assert v.as_dict()["vacuous"]["status"] == "vacuous"
