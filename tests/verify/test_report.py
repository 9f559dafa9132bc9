"""Reports: LaTeX escaping and line breaking, the golden derivation of ahn2023.thm1, the errata of a
corrected claim, the CLI's one-line errors, and the ahn2023 report compiled to PDF and read back
with pdftotext."""
import dataclasses
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from verify.claim import Correction
from verify.cli import main
from verify.latex import (Latex, display, escape, number, split_relation, split_terms, tex_width)
from verify.registry import find
from verify.report import derivation_tex, environment, write_report
from verify.runner import check_claim

GOLDEN = Path(__file__).with_name("golden")
HAVE_LATEX = bool(shutil.which("latexmk") or shutil.which("pdflatex"))
HAVE_PDFTOTEXT = bool(shutil.which("pdftotext"))
needs_latex = pytest.mark.skipif(not (HAVE_LATEX and HAVE_PDFTOTEXT),
                                 reason="needs latexmk or pdflatex, and pdftotext (poppler-utils)")


# ------------------------------------------------------------------------------------ escaping
@pytest.mark.parametrize("text, expected", [
    ("a_b", r"a\_b"), ("50%", r"50\%"), ("x & y", r"x \& y"), ("#1", r"\#1"), ("$5", r"\$5"),
    ("{x}", r"\{x\}"), ("a~b", r"a\textasciitilde{}b"), ("x^2", r"x$^{2}$"), ("x^{a b}", r"x\textasciicircum{}\{a b\}"),
    ("C:\\dir", r"C:\textbackslash{}dir"), ("λ ⊗ Σ", r"$\lambda$ $\otimes$ $\Sigma$"),
    ("café", "cafe"), ("a<b>c", r"a\textless{}b\textgreater{}c"),
])
def test_escape(text, expected):
    assert escape(text) == expected


@settings(max_examples=60, deadline=None, derandomize=True)
@given(st.text(max_size=40))
def test_escaped_text_has_no_active_characters(text):
    out = escape(text)
    assert out.isascii()
    # every active character is escaped, or belongs to the escape sequences themselves
    # math runs: commands, grouped super/subscripts, letters, digits (Unicode math as $...$)
    math = r"\$(?:\\[A-Za-z]+|\\\||[\^_]\{[^{}$]*\}|\\[a-z]+\{[A-Za-z]\}|[A-Za-z0-9+\-=() ])+\$"
    stripped = re.sub(r"\\(textbackslash|textasciitilde|textasciicircum|textless|textgreater|"
                      r"textbar|dots)\{\}|\\[&%$#_{}]|" + math, "", out)
    tie = set() if "\xa0" in text else {"~"}  # a no-break space is a tie, ~
    assert not set(stripped) & (set("&%$#_{}^\\") | tie)
    assert "$$" not in out


def test_an_option_keeps_its_two_hyphens_and_an_undecided_tier_reads_undecided():
    """"--budget" is not set as an en dash in text or in breakable text; the schema's tier
    status ``error`` reads *undecided* in the report and on the terminal."""
    from verify.latex import breakable
    from verify.output import status_word
    from verify.report import status_tex

    assert "-{}-budget" in escape("use --budget paper") and "--" not in escape("--budget")
    assert "-{}-budget" in breakable("use --budget paper")
    assert escape("1-2") == "1-2"
    assert "$^{C(G_p)}$" in escape("n^{C(G_p)}")  # a superscript with parentheses is math too
    assert r"un\-de\-cided" in status_tex("error") and status_tex("pass") == r"\status{pass}"
    assert status_word("error") == "undecided" and status_word("fail") == "fail"



    env = environment()
    t = env.from_string(r"\VAR{plain} \VAR{tex} \VAR{n|num}")
    out = t.render(plain="50% of x_1 & {y}", tex=Latex(r"\frac{1}{2}"), n=2.5e-17)
    assert out == r"50\% of x\_1 \& \{y\} \frac{1}{2} $2.5\times 10^{-17}$"


@pytest.mark.parametrize("value, expected", [
    (3, "3"), (0.905034788, "0.905035"), (2.65e-17, r"2.65\times 10^{-17}"), (1e6, "10^{6}"),
    ("1223/2187", r"\tfrac{1223}{2187}"), ("-2/3", r"-\tfrac{2}{3}"),
    (float("nan"), r"\mathrm{NaN}"),
    (True, r"\text{yes}"),
])
def test_number(value, expected):
    assert number(value) == expected


# ------------------------------------------------------------------------- formula line breaking
def test_split_terms_respects_groups():
    tex = r"\frac{n + 1}{n}\, \left(a + b\right) - 2 x^{-1} + \operatorname{tr}(A - B)"
    assert split_terms(tex) == [r"\frac{n + 1}{n}\, \left(a + b\right)", "- 2 x^{-1}",
                                r"+ \operatorname{tr}(A - B)"]
    assert split_relation(r"f\big([0;\beta]\big) = a + b") == (r"f\big([0;\beta]\big)", "=",
                                                                 "a + b")


@settings(max_examples=15, deadline=None, derandomize=True)
@given(st.lists(st.tuples(st.integers(1, 9), st.sampled_from(["x", r"\Sigma", "Q_{xx}", "p_{yy}"]),
                          st.integers(1, 4)), min_size=1, max_size=25))
def test_long_sums_are_broken_into_lines_that_fit(terms):
    rhs = " + ".join(rf"\frac{{{c}}}{{n}}\, \operatorname{{tr}}({' '.join([s] * k)})"
                     for c, s, k in terms)
    out = display("f(A) = " + rhs, width=60)
    if tex_width("f(A) = " + rhs) <= 60:
        assert out.startswith("\\[")
        return
    assert out.startswith("\\begin{align*}") and out.endswith("\\end{align*}")
    lines = out.split("\n")[1:-1]
    assert lines[0].startswith("f(A) &= ")
    for line in lines:
        assert tex_width(line.replace("&", "")) <= 60 * 1.1 or "scalebox" in line
    # every term is still there, in order
    pieces = [line.split("&", 1)[1].removesuffix(" \\\\") for line in lines]
    body = " ".join([pieces[0].removeprefix("= ")]
                    + [p.removeprefix("\\quad ") for p in pieces[1:]])
    assert split_terms(body) == split_terms(rhs)


# ------------------------------------------------------------------------------ golden fragment
def test_thm1_derivation_matches_golden():
    """The typeset derivation of ahn2023.thm1 (symbolic tier); no timings or dates in it.

    Regenerate after an intended change: ICL_VERIFY_UPDATE_GOLDEN=1 python -m pytest -k golden
    """
    v = check_claim(find("ahn2023.thm1"), tiers=["symbolic"], budget="quick")
    text = derivation_tex(v)
    path = GOLDEN / "ahn2023_thm1_derivation.tex"
    if os.environ.get("ICL_VERIFY_UPDATE_GOLDEN"):
        path.write_text(text)
    assert text == path.read_text()
    for title in ("Forward pass", "Reduction", "Moments", "Population loss", "Stationarity",
                  "Solution", "Comparison with eq. (8)"):
        assert title in text


# ------------------------------------------------------------------------------------- errata
def _corrected_thm1():
    """ahn2023.thm1 as if eq. (8) were printed with (n+2)/n, with the true formula on file."""
    thm1 = find("ahn2023.thm1")
    wrong = thm1.formula("A_top").text.replace("(n+1)/n", "(n+2)/n")
    formulas = tuple(dataclasses.replace(f, text=wrong) if f.name == "A_top" else f
                     for f in thm1.formulas)
    correction = Correction("(n+1)/n in place of (n+2)/n in eq. (8)",
                            "a typo of 100% & #1 size_n", {"A_top": thm1.formula("A_top").text})
    return dataclasses.replace(thm1, formulas=formulas, correction=correction)


def test_errata_show_counterexample_and_correction(tmp_path, monkeypatch):
    claim = _corrected_thm1()
    v = check_claim(claim, tiers=["symbolic"], budget="quick")
    assert v.verdict == "corrected"
    tex = write_report([claim], [v], tmp_path, {"tiers": ["symbolic"], "budget": "quick"})
    text = tex.read_text()
    errata = text[text.index(r"\subsection*{Errata}"):text.index(r"\subsection{")]
    assert r"\verdict{corrected}" in errata
    assert "-21/61" in errata and "-21/55" in errata  # the two numbers that disagree, n = 7
    assert r"a typo of 100\% \& \#1 size\_n" in errata
    assert r"\textit{The paper says} (eq. (8))" in errata and r"\textit{Correct}" in errata
    assert r"\to$\allowbreak{}\status{pass}" in text  # summary: fail -> pass, corrected
    if shutil.which("pdflatex"):  # the fallback compiler (the PDF test below uses latexmk)
        from verify import report

        real_which = shutil.which
        monkeypatch.setattr(report.shutil, "which",
                            lambda name: None if name == "latexmk" else real_which(name))
        compiler = report.find_compiler()
        assert compiler[0] == "pdflatex"
        assert report.compile_pdf(tex, compiler).exists()


# --------------------------------------------------------------------------------------- CLI
def _run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("argv, message", [
    (["report", "--paper", "ahn2023"], "required: --out"),
    (["report", "nosuch.thm1", "--out", "{tmp}/r"], "unknown claim"),
    (["report", "ahn2023.thm1", "--out", "{tmp}/file/r"], "cannot write"),
    (["report", "ahn2023.thm1", "--out", "{tmp}/r", "--budget", "huge"], "budgets are"),
])
def test_report_bad_input_is_one_line(capsys, tmp_path, argv, message):
    (tmp_path / "file").write_text("")
    code, out, err = _run(capsys, *[a.format(tmp=tmp_path) for a in argv])
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1, err


def test_pdf_without_latex_is_one_line(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr("verify.report.shutil.which", lambda name: None)
    code, out, err = _run(capsys, "report", "ahn2023.thm1", "--out", str(tmp_path / "r"),
                          "--pdf")
    assert code == 2 and "neither is installed" in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "r").exists()  # failed before running any check


def test_report_takes_set_and_records_its_provenance(capsys, tmp_path):
    """report takes --set like check, prints a verdict summary, and its title page says what
    ran: version, commit, date, the device used (not "auto"), seed and the exact command."""
    code, out, _ = _run(capsys, "report", "vonoswald2023.prop1", "--budget", "quick", "--tier",
                        "symbolic", "--out", str(tmp_path / "r"), "--set",
                        "P=eta/(N+1)*Identity(d+m)")
    assert code == 1
    assert "1 claim: 1 refuted; not verified: vonoswald2023.prop1 (refuted)" in out
    tex = (tmp_path / "r" / "report.tex").read_text()
    for key in ("icl-verify &", "commit &", "date &", "device & cpu (", "seed & 0",
                "command & \\texttt{icl-verify report vonoswald2023.prop1"):
        assert key in tex, key
    assert "-{}-set 'P=" in tex and "auto" not in tex.split("\\tableofcontents")[0]


# ------------------------------------------------------------------------------ the PDF itself
@needs_latex
def test_ahn2023_report_pdf_shows_verdicts_derivation_and_figures(capsys, tmp_path):
    """The issue's command restricted to Thm 1 and Lemma 2 (the whole paper is the slow test
    below), at the quick budget with every tier (so the train figure is in it)."""
    out = tmp_path / "r"
    code, stdout, err = _run(capsys, "report", "ahn2023.thm1", "ahn2023.lemma2", "--budget",
                             "quick", "--out", str(out), "--pdf")
    assert (out / "report.tex").exists() and (out / "report.pdf").exists(), err
    text = subprocess.run(["pdftotext", str(out / "report.pdf"), "-"], capture_output=True,
                          text=True, check=True).stdout
    flat = re.sub(r"\s+", "", text)
    verdicts = re.findall(r"Verdict:(verified|corrected|refuted|inconclusive)—", flat)
    assert len(verdicts) == 2 and flat.count("ahn2023.thm1") >= 2 and "ahn2023.lemma2" in flat
    assert code == (0 if all(v in ("verified", "corrected") for v in verdicts) else 1)
    assert "Summary" in text and "Errata" in text
    # derived formulas, typeset from the engine's objects: the stationary point's denominator,
    # the tail of the restricted loss and the Wishart moment E[W M W]
    assert "pyy(λn+λ+p1)" in flat
    assert "2pyytr(QxxΣΣ)+tr(Σ)" in flat
    assert "E[WMW]=nΣM⊤Σ+n2ΣMΣ+ntr(MΣ)Σ" in flat
    # the numeric table and the training figures (vector PDF, text extractable)
    assert "MCmean" in flat and "interval" in text
    for claim in ("ahn2023-thm1", "ahn2023-lemma2"):
        fig = out / "figures" / f"{claim}-train.pdf"
        assert fig.exists() and b"/Subtype /Image" not in fig.read_bytes()
    assert "training loss" in text and "gap to the optimum" in text


@pytest.mark.slow
def test_whole_paper_report_compiles(capsys, tmp_path):
    """`icl-verify report --paper ahn2023 --pdf`: every claim of the paper typesets (figures
    included) and the PDF names each of them with its verdict."""
    from verify.registry import by_paper

    out = tmp_path / "r"
    code, stdout, err = _run(capsys, "report", "--paper", "ahn2023", "--budget", "quick",
                             "--out", str(out), "--pdf")
    assert (out / "report.pdf").exists(), err
    text = subprocess.run(["pdftotext", str(out / "report.pdf"), "-"], capture_output=True,
                          text=True, check=True).stdout
    flat = re.sub(r"\s+", "", text)
    verdicts = re.findall(r"Verdict:(verified|corrected|refuted|inconclusive)—", flat)
    claims = by_paper("ahn2023")
    assert len(verdicts) == len(claims)
    assert all(c.id in flat for c in claims)


def test_evidence_expressions_are_typeset_and_nothing_else_is():
    """sympy-printed expressions in evidence are typeset (read by the whitelisting parser, never
    sympified); prose, identifiers and anything executable stay text."""
    from verify.report_values import value_tex

    assert value_tex("4*(d**4 + 2*d**3*s)/C**2") == r"$\frac{4 d^{4} + 8 d^{3} s}{C^{2}}$"
    assert r"+ o\left(\frac{1}{C^{2}}\right)$" in value_tex("(d + s)*C^(-2) + o(C^(-2))")
    assert r"\sigma_{0}^{2}" in value_tex("[[1, sigma0], [sigma0, sigma0**2]]")
    for text in ("converged", "w_star", "__import__('os').system('true')*2",
                 "(lambda: 1)()*x", "a typo of 100% & #1"):
        assert "$" not in value_tex(text), text


# ------------------------------------------------------------------ what would run past the margin
def test_ascii_braced_superscripts_are_math():
    assert escape("A^{1/2} Σ A^{1/2}") == r"A$^{1/2}$ $\Sigma$ A$^{1/2}$"
    assert escape("^{1} x^{a b}") == r"\textasciicircum{}\{1\} x\textasciicircum{}\{a b\}"


def test_an_expression_scaled_to_the_line_gets_a_line_of_its_own():
    from verify.report_values import prose_tex

    big = "(" + " + ".join(f"{7 ** k}*n**{k}" for k in range(12)) + ")/(3*n**13)"
    out = prose_tex(f"generic d=2: difference {big}; generic d=3: difference n**2 exactly")
    assert r"difference\newline \resizebox{0.97\linewidth}" in out
    assert r"};\newline generic d=3: difference $n^{2}$ exactly" in out.replace("  ", " ")
    assert not prose_tex(big).startswith(r"\newline")  # nothing before it: no empty line


def test_a_statement_formula_too_long_for_a_line_is_displayed():
    from verify.report_values import statement_tex

    long = r"L=" + "+".join(rf"\mathbb E\big[\|(I-\Sigma A_{k})^2\|^2\big]" for k in range(4))
    out = statement_tex(rf"${long}$ with $\Sigma=\frac1n XX^\top$ (Lemma 4.1).")
    assert out.startswith(r"\begin{align*}") and r"with $\Sigma=\frac1n XX^\top$" in out
    assert statement_tex(r"short $a=b$ and \$5") == r"short $a=b$ and \$5"


def test_a_display_line_that_is_still_too_wide_is_scaled_with_room_to_spare():
    wide = r"x = \frac{" + " ".join(rf"\left(a_{k} + b_{k}\right)" for k in range(12)) + "}{2}"
    factor = float(re.search(r"\\scalebox\{([0-9.]+)\}", display(wide)).group(1))
    assert factor * tex_width(wide) < 62 / 1.15


def test_every_statement_keeps_its_subscripts_in_math():
    # the statement is LaTeX written with the claim: an _ outside $...$ stops pdflatex
    from verify.registry import all_claims

    bad = [c.id for c in all_claims()
           if re.search(r"(?<!\\)[_^]", re.sub(r"(?<!\\)\$[^$]*\$", "", c.statement))]
    assert not bad, bad
