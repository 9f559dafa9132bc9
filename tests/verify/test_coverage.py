"""The coverage ledgers: each paper's statements in paper order, every claim tied to the text it
checks, malformed ledgers refused in one line, and list --coverage."""
import pytest

from verify import coverage, registry
from verify.cli import main
from verify.errors import UsageError

PAPERS = sorted(registry.BUILT_IN)


@pytest.mark.parametrize("paper", PAPERS)
def test_the_ledger_follows_the_paper_and_ties_every_claim_to_its_text(paper):
    cov = coverage.load(paper)
    lines = [i.line for i in cov.items]
    assert lines == sorted(lines), "items in paper order"
    named = {c for i in cov.items for c in i.claims}
    missing = [c.id for c in registry.by_paper(paper) if c.id not in named]
    assert not missing, f"claims no ledger item names: {missing}"
    assert 0 < cov.checked <= cov.checkable <= len(cov.items)
    assert all(i.why for i in cov.items if i.status == "not checkable")


def test_a_malformed_ledger_is_refused_in_one_line(tmp_path, monkeypatch):
    bad = tmp_path / "coverage.toml"
    bad.write_text('[[item]]\nref = "Eq. (1)"\nkind = "equation"\nline = 3\nsays = "x"\n'
                   'status = "checked"\nclaims = ["ahn2023.nosuch1"]\nwhy = ""\n')
    monkeypatch.setattr(coverage, "ledger_path", lambda paper: bad)
    with pytest.raises(UsageError, match="unknown claim 'ahn2023.nosuch1'"):
        coverage.load("ahn2023")
    bad.write_text('[[item]]\nref = "Eq. (1)"\nkind = "equation"\nline = 3\nsays = "x"\n'
                   'status = "checkable"\nclaims = ["ahn2023.thm1"]\nwhy = ""\n')
    with pytest.raises(UsageError, match="only a checked one"):
        coverage.load("ahn2023")


def test_list_coverage(capsys):
    assert main(["list", "--coverage"]) == 2
    assert "needs --paper" in capsys.readouterr().err
    assert main(["list", "--paper", "xie2025", "--coverage", "--verdicts"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("xie2025: ") and "checkable" in out and "(verified)" in out
