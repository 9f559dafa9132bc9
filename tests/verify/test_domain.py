"""The sizes mutate draws: a compound shape entry (d+1) follows the sizes it names."""
from verify.domain import size_assignments
from verify.formulas import FormulaSymbol, NamedFormula


def test_a_compound_shape_entry_is_computed_not_drawn():
    f = NamedFormula("W", "BlockMatrix([[A, ZeroMatrix(d, m)], [ZeroMatrix(m, d), Identity(m)]])",
                     (FormulaSymbol("d"), FormulaSymbol("m"),
                      FormulaSymbol("A", "matrix", ("d", "d"))), shape=("d+m", "d+m"))
    for sizes in size_assignments(f):
        assert sizes["d+m"] == sizes["d"] + sizes["m"], sizes
    assert len({(s["d"], s["m"]) for s in size_assignments(f)}) == 3
