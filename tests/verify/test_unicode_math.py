"""show prints a statement as readable text: no LaTeX commands left for the papers' statements,
fractions, scripts and Greek letters in Unicode."""
import re

from verify import registry
from verify.unicode_math import readable


def test_the_pieces():
    assert readable(r"$x^{(i)}\sim\mathcal N(0,\Sigma)$") == "x⁽ⁱ⁾∼𝒩(0,Σ)"
    assert readable(r"\frac{n+1}{n}\lambda_i") == "(n+1)/nλᵢ"
    assert readable(r"A^\top B^{-1}") == "Aᵀ B⁻¹"
    assert readable(r"\mathbb E[\|w\|^2] \le \sqrt{d}") == "𝔼[‖w‖²] ≤ √d"


def test_no_statement_keeps_a_latex_command():
    for claim in registry.all_claims():
        shown = readable(claim.statement)
        assert not re.search(r"\\[A-Za-z]{2,}", shown), (claim.id, shown)
        assert "$" not in shown
