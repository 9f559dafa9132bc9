"""What a reader of a report sees (issue 36's "Done when"): no raw Python/sympy (`**`), nothing cut
("... (227 characters)"), no "oo" for infinity, no overfull box over 10 pt, every `fig` claim with
its re-drawn paper figure, and the provenance on the title page (version, commit, date, device).

The default run reports one `fig` claim and one corrected or refuted claim of each paper; the
slow job (`.ci/slow`) reports every claim of each paper."""
from __future__ import annotations

import re
import shutil
import subprocess
from datetime import datetime, timezone
from pathlib import Path

import pytest

from verify import __version__
from verify.cli import main
from verify.registry import by_paper

HAS_LATEX = shutil.which("latexmk") is not None or shutil.which("pdflatex") is not None
HAS_PDFTOTEXT = shutil.which("pdftotext") is not None
OVERFULL = re.compile(r"Overfull \\[hv]box \((\d+(?:\.\d+)?)pt too")

# one figure claim and one claim the engine corrects or refutes, per paper
SAMPLE = {
    "ahn2023": ("ahn2023.fig1", "ahn2023.eq_b1_loss"),
    "gatmiry2024": ("gatmiry2024.fig3", "gatmiry2024.thm_a1_label_update"),
    "xie2025": ("xie2025.fig2", "xie2025.thm2"),
    "yang2024": ("yang2024.fig3", "yang2024.eq56"),
}


def report_defects(out: Path, claim_ids: list[str]) -> list[str]:
    """Every defect a reader would see in the report written to ``out``: read from the .tex, and
    from the PDF's text and the LaTeX log where the PDF was built."""
    tex = (out / "report.tex").read_text()
    body = re.sub(r"(?<!\\)%.*", "", tex)
    problems = []
    pdf = out / "report.pdf"
    if pdf.exists() and HAS_PDFTOTEXT:
        text = subprocess.run(["pdftotext", str(pdf), "-"], capture_output=True, text=True,
                              check=True).stdout
    else:
        text = body
    if "**" in text:
        problems.append(f"'**' in the text: {_around(text, '**')}")
    cut = re.search(r"\(\d[\d,]* characters\)", text)
    if cut:
        problems.append(f"a value cut short: {_around(text, cut.group(0))}")
    oo = re.search(r"(?<![A-Za-z\\])oo(?![A-Za-z])", text)
    if oo:
        problems.append(f"'oo' for infinity: {text[max(0, oo.start() - 60):oo.end() + 60]!r}")
    dash = re.search(r"(?<![-\w])[\u2013\u2014][a-z]", text) if text is not body else \
        re.search(r"(?<![-{}\\\w])--[a-z]", body)
    if dash:  # an option set as a dash: "--budget" printed as an en dash and "budget"
        problems.append(f"an option's '--' set as a dash: {_around(text, dash.group(0))}")
    log = out / "report.log"
    if pdf.exists() and log.exists():
        wide = [float(m) for m in OVERFULL.findall(log.read_text(errors="replace"))]
        if any(w > 10 for w in wide):
            problems.append(f"overfull boxes over 10pt: {sorted(w for w in wide if w > 10)}")
    verdicts = {m.group(1).replace("\\_", "_"): m.group(2) for m in re.finditer(
        r"\\subsection\{\\texttt\{([^}]*)\}.*\n\\textbf\{Verdict: \\verdict\{(\w+)\}", tex)}
    for cid in claim_ids:
        # a figure claim that decided nothing at this budget (its training needs --budget
        # paper) has no numbers to draw; its verdict says so
        if ".fig" in cid and verdicts.get(cid) != "inconclusive":
            # a claim about part of a figure (ahn2023.fig4_update) shares the figure its
            # figure's claim (ahn2023.fig4) draws
            names = [f"figures/{x.replace('.', '-')}-paper.pdf"
                     for x in dict.fromkeys((cid, re.match(r"[^.]+\.fig\d+", cid).group(0)))]
            if not any((out / n).exists() and n.removesuffix(".pdf") in tex for n in names):
                problems.append(f"{cid}: no re-drawn paper figure ({' or '.join(names)})")
    today = datetime.now(timezone.utc).strftime("%Y-%m-%d")
    title = tex.split(r"\tableofcontents", 1)[0]
    for what, needle in (("version", __version__), ("date", today), ("device", "cpu")):
        if needle not in title:
            problems.append(f"the title page has no {what} ({needle!r})")
    if not re.search(r"commit.*?([0-9a-f]{7,40}|not a git checkout)", title, re.S):
        problems.append("the title page has no commit")
    return problems


def _around(text: str, needle: str, width: int = 60) -> str:
    i = text.find(needle)
    return repr(text[max(0, i - width):i + len(needle) + width])


def _report(capsys, out: Path, *args: str) -> int:
    code = main(["report", *args, "--budget", "quick", "--device", "cpu", "--out", str(out),
                 *(["--pdf"] if HAS_LATEX else [])])
    capsys.readouterr()
    return code


@pytest.mark.parametrize("paper", sorted(SAMPLE))
def test_a_sample_report_reads_cleanly(capsys, tmp_path, paper):
    ids = list(SAMPLE[paper])
    _report(capsys, tmp_path, *ids, "--tier", "symbolic,numeric")
    assert report_defects(tmp_path, ids) == []


@pytest.mark.slow
@pytest.mark.parametrize("paper", sorted(SAMPLE))
def test_the_whole_paper_report_reads_cleanly(capsys, tmp_path, paper):
    _report(capsys, tmp_path, "--paper", paper)
    assert report_defects(tmp_path, [c.id for c in by_paper(paper)]) == []


def test_the_checker_finds_each_defect(tmp_path):
    """The checks above can fail: a report with each defect is caught."""
    (tmp_path / "report.tex").write_text(
        "\\title{x}\\tableofcontents\n2*x**2 ... (227 characters) C -> oo\n")
    found = "\n".join(report_defects(tmp_path, ["p.fig1"]))
    for what in ("'**'", "cut short", "'oo'", "p.fig1", "version", "date", "device", "commit"):
        assert what in found


# control words LaTeX (with amsmath, amssymb, graphicx) knows that statements may use; a new
# one goes here once the report compiles with it
KNOWN_MACROS = set("""
Delta Gamma Lambda Omega Phi Pi Psi Sigma Theta Xi alpha beta gamma delta epsilon varepsilon
zeta eta theta vartheta iota kappa lambda mu nu xi pi rho varrho sigma tau upsilon phi varphi
chi psi omega ell approx bar begin big Big bigg Bigg bigl bigr Bigl Bigr binom boldsymbol cdot
cdots ddots dagger det diag dot dots end exp forall frac ge geq hat in inf infty int kappa
langle rangle le leq left right leftarrow Leftarrow rightarrow Rightarrow log mathbb mathbf
mathcal mathrm mathsf max min mid ne neq notin operatorname partial preccurlyeq succcurlyeq prod
propto quad qquad sim sqrt star succ sum sup text textrm tilde widetilde widehat times to top
tr underbrace overline vdots otimes circ odot setminus subseteq subset cup cap emptyset nabla mapsto
""".split())


def test_statements_use_only_macros_latex_knows():
    """A statement written in two string pieces can glue a macro to the next word
    (``w_\\star`` + ``w_\\star^\\top`` -> ``\\starw``): LaTeX stops on it, so the report would not
    compile."""
    from verify.registry import all_claims

    unknown = {}
    for c in all_claims():
        for m in re.findall(r"(?<!\\)\\([A-Za-z]+)", c.statement.replace("\\\\", " ")):
            if m not in KNOWN_MACROS:
                unknown.setdefault(m, c.id)
    assert unknown == {}
