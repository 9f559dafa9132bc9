"""``icl-verify report``: the verdicts as a LaTeX document (and a PDF), one section per paper.

Per paper: a summary table of the claims and their verdicts, an errata section (claims refuted
or corrected, with their counterexamples and corrections), then per claim its statement and
assumptions, the named formulas checked, the derivation as the symbolic tier did it (the
``TierResult.steps`` the tiers recorded), the numeric evidence (the instance, exact values against
Monte Carlo estimates with their intervals), the paper's figure re-drawn from the tiers' own
numbers (``verify.paper_figures``), the training curves (a vector PDF figure) and the verdict
with its counterexample or correction.

The report runs the checks itself (``verify.runner.check_claim``) and typesets the ``Verdict``
objects.  Templates live in ``verify/templates`` (Jinja2 with ``\\BLOCK{}``/``\\VAR{}``
delimiters); every plain string is escaped on output, LaTeX passes only as ``verify.latex.Latex``.
"""
from __future__ import annotations

import argparse
import io
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

from .claim import TIERS, Claim
from .errors import UsageError
from .outdir import locked, prepare_out, write_atomic
from .output import status_word
from .paper_figures import KEY as PAPER_FIGURE_KEY, paper_figure
from .latex import (Latex, breakable, code, display, escape, is_matrix, is_scalar, matrix, number,
                    sympy_latex)
from .report_values import (_SKIP_KEYS, _key, _label, _to_appendix, _with_math_symbols,
                            appendix_ref, prose_tex, statement_tex, value_tex)
from .verdict import Verdict

TEMPLATES = Path(__file__).with_name("templates")
REFERENCE_LOSS_KEYS = ("reference_loss", "paper_loss", "optimal_loss")


# ------------------------------------------------------------------------------------ command
def register(sub) -> None:
    """Add ``report`` to the CLI's subcommands (``verify.cli`` calls this)."""
    from .cli import add_run_options, add_selection

    from .cli import EXIT_TEXT

    p = sub.add_parser("report", help="check claims and write a LaTeX report (with --pdf, a PDF)",
                       epilog=EXIT_TEXT, formatter_class=argparse.RawDescriptionHelpFormatter)
    add_selection(p)
    add_run_options(p)
    p.add_argument("--set", action="append", default=[], metavar="NAME=EXPR",
                   help="replace a named formula by a sympy expression (as for check)")
    p.add_argument("--out", required=True, metavar="DIR",
                   help="directory for report.tex, its figures and (with --pdf) report.pdf")
    p.add_argument("--pdf", action="store_true", help="compile with latexmk -pdf (or pdflatex)")
    p.set_defaults(func=cmd_report)


def cmd_report(args) -> int:
    from .cli import (EXIT_FAILED, EXIT_OK, executor_from, formula_overrides, run_options,
                      select_claims, verdict_summary)
    from .parallel import check_all
    from .runner import validate

    claims = select_claims(args)
    options = run_options(args)
    mine = formula_overrides(args.set, claims)
    for claim in claims:  # every claim's sizes before any work
        validate(claim, options["sizes"], options["sigma"], options["budget"], options["tiers"])
    compiler = find_compiler() if args.pdf else None
    out = prepare_out(args.out)
    executor = executor_from(args, "claims")
    with locked(out):  # one run per directory: a second one exits 2 instead of losing claims
        local = executor.jobs == 1 and executor.scheduler is None
        verdicts = check_all(claims, {**options, "progress": executor.progress and local}, mine,
                             executor)
        try:
            tex = write_report(claims, verdicts, out, {**options, "argv": args.argv})
        except OSError as exc:
            raise UsageError(f"--out {args.out}: cannot write the report "
                             f"({exc.strerror or exc})") from None
        print(f"wrote {tex}")
        if compiler is not None:
            print(f"wrote {compile_pdf(tex, compiler)}")
    print(verdict_summary(verdicts))
    return EXIT_OK if all(v.passed for v in verdicts) else EXIT_FAILED


def find_compiler() -> list[str]:
    """latexmk -pdf if installed, else pdflatex (run twice); UsageError if neither is."""
    if shutil.which("latexmk"):
        return ["latexmk", "-pdf", "-interaction=nonstopmode", "-halt-on-error", "-quiet"]
    if shutil.which("pdflatex"):
        return ["pdflatex", "-interaction=nonstopmode", "-halt-on-error"]
    raise UsageError("--pdf needs latexmk or pdflatex, and neither is installed (apt-get install "
                     "texlive-latex-base texlive-latex-recommended lmodern latexmk)")


def compile_pdf(tex: Path, compiler: Sequence[str]) -> Path:
    """Compile ``tex`` in its directory; UsageError with the log's first error if LaTeX fails."""
    runs = 1 if Path(compiler[0]).name == "latexmk" else 3  # longtable/hyperref settle in 3
    for _ in range(runs):
        try:
            done = subprocess.run([*compiler, tex.name], cwd=tex.parent, capture_output=True,
                                  text=True, errors="replace", timeout=600,
                                  stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            raise UsageError(f"{compiler[0]} did not finish in 10 minutes on {tex}") from None
        if done.returncode != 0:
            log = tex.with_suffix(".log")
            raise UsageError(f"{compiler[0]} failed on {tex}: {_first_error(log, done.stdout)} "
                             f"(see {log})")
    return tex.with_suffix(".pdf")


def _first_error(log: Path, stdout: str) -> str:
    text = log.read_text(errors="replace") if log.exists() else stdout
    for line in text.splitlines():
        if line.startswith("!"):
            return line[1:].strip()
    return "no error line in the log"


# ----------------------------------------------------------------------------------- document
def write_report(claims: Sequence[Claim], verdicts: Sequence[Verdict], out: Path,
                 options: Mapping[str, Any] | None = None) -> Path:
    """Write ``out/report.tex`` and ``out/figures/*.pdf``; returns the .tex path."""
    options = dict(options or {})
    appendix: list[dict] = []
    views = [claim_view(c, v, out, appendix) for c, v in zip(claims, verdicts)]
    papers = []
    for key in dict.fromkeys(c.paper for c in claims):
        mine = [cv for cv in views if cv.paper == key]
        papers.append({"key": key, "reference": paper_reference(key), "claims": mine,
                       "errata": [cv for cv in mine if cv.verdict in ("refuted", "corrected")],
                       "undecided": [cv for cv in mine if cv.verdict == "inconclusive"]})
    text = render("report.tex.j2", papers=papers, settings=_settings(options, verdicts),
                  tiers=TIERS, appendix=appendix, long_display=LONG_DISPLAY)
    tex = out / "report.tex"
    write_atomic(tex, text)
    return tex


def paper_reference(key: str) -> str:
    """The paper's reference: the first paragraph of its module's docstring."""
    from .registry import reference

    return reference(key)


def _settings(options: Mapping[str, Any], verdicts: Sequence[Verdict]) -> list[tuple[str, Any]]:
    """The provenance on the title page: what ran, where, when, and the command."""
    from datetime import datetime, timezone

    from . import __version__

    asked = options.get("device", verdicts[0].device if verdicts else "auto")
    rows = [("icl-verify", __version__), ("commit", _commit()),
            ("date", datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")),
            ("tiers", ", ".join(options.get("tiers", TIERS))),
            ("budget", options.get("budget", verdicts[0].budget if verdicts else "")),
            ("device", _device_used(asked)),
            ("seed", options.get("seed", verdicts[0].seed if verdicts else 0))]
    if options.get("argv") is not None:
        import shlex

        rows.append(("command", code(shlex.join(["icl-verify", *options["argv"]]))))
    if options.get("sizes"):
        rows.append(("sizes", ", ".join(f"{k}={v}" for k, v in options["sizes"].items())))
    if options.get("sigma") is not None:
        sigma = options["sigma"]
        rows.append(("sigma", sigma.describe() if hasattr(sigma, "describe") else str(sigma)))
    return rows


def _commit() -> str:
    """The git commit of the checkout the engine runs from (with "+changes" when it has
    uncommitted ones), or "not a git checkout"."""
    root = Path(__file__).resolve().parents[1]
    try:
        head = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=root, text=True,
                              capture_output=True, timeout=10)
        if head.returncode != 0:
            return "not a git checkout"
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=root, text=True, capture_output=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return "not a git checkout"
    return head.stdout.strip() + (" +changes" if dirty.stdout.strip() else "")


def _device_used(asked: str) -> str:
    """The device the tiers ran on (``auto`` resolved), with the GPU's name."""
    import torch

    from models.device import DeviceUnavailable, resolve_device

    try:
        device = resolve_device(asked)
    except DeviceUnavailable:
        return asked
    if device.type == "cuda":
        return f"cuda ({torch.cuda.get_device_name(device)})"
    return f"cpu ({torch.get_num_threads()} threads)"


# ------------------------------------------------------------------------------- claim views
@dataclass
class ClaimView:
    """What the templates need about one claim, every string either plain or ``Latex``."""

    id: str
    paper: str
    title: str
    label: str
    verdict: str
    reason: str
    statement: Latex
    assumptions: list[str]
    formulas: list[dict]
    tiers: list[dict]
    derivation: list[dict]
    evidence: list[dict]
    figure: dict | None
    counterexample: list[dict]
    correction: dict | None
    notes: str = ""
    overridden: list[str] = field(default_factory=list)
    usefulness: str = ""  # the vacuity finding, where the claim declares one
    paper_figure: dict | None = None  # the paper's figure re-drawn (verify.paper_figures)


def claim_view(claim: Claim, verdict: Verdict, out: Path | None,
               appendix: list | None = None) -> ClaimView:
    steps = derivation_steps(verdict, appendix)
    shown = {s["source"] for s in steps}
    figure = None
    if out is not None and "train" in verdict.tiers:
        figure = training_figure(verdict, out)
    redrawn = paper_figure(verdict, out) if out is not None else None
    return ClaimView(
        id=claim.id, paper=claim.paper, title=claim.title, label=_label(claim.id),
        verdict=verdict.verdict, reason=verdict.reason.rstrip(". "),
        statement=statement_tex(claim.statement),
        assumptions=list(claim.assumptions),
        formulas=[formula_view(claim, name, text, name in verdict.overridden)
                  for name, text in verdict.formulas.items()],
        tiers=[{"name": t, "status": r.status, "seconds": r.seconds, "reason": r.reason,
                "corrected": (verdict.correction_tiers or {}).get(t, None) and
                verdict.correction_tiers[t].status}
               for t, r in verdict.tiers.items()],
        derivation=steps,
        evidence=_evidence_views(verdict, shown, appendix),
        figure=figure,
        counterexample=value_rows({k: v for k, v in (verdict.counterexample or {}).items()
                                   if not (k == "reason" and v in verdict.reason)}, shown),
        correction=correction_view(claim, verdict),
        notes=claim.notes, overridden=list(verdict.overridden),
        usefulness=(f"{verdict.vacuous['status']}: {verdict.vacuous['where']}"
                    if verdict.vacuous.get("status") in ("informative", "vacuous") else ""),
        paper_figure=redrawn)


def _evidence_views(verdict: Verdict, shown: set[str], appendix: list | None = None) -> list[dict]:
    """Each tier's evidence; an instance equal to the previous tier's is named, not repeated."""
    out, previous = [], None
    for tier, result in verdict.tiers.items():
        if not result.evidence:
            continue
        view = tier_evidence(tier, result.evidence, shown, (appendix, verdict.claim))
        inst = result.evidence.get("instance")
        if view["instance"] is not None and inst == (previous or {}).get("instance"):
            view["instance"] = {"same_as": previous["tier"]}
        if view["instance"] is not None:
            previous = {"tier": tier, "instance": inst}
        out.append(view)
    return out




def formula_view(claim: Claim, name: str, text: str, overridden: bool = False) -> dict:
    """A named formula: its text as typed and the parsed sympy expression typeset."""
    try:
        f = claim.formula(name)
        # width 56: the display sits in a description list, indented by its left margin
        tex = display(f"{_symbol(name)} = {sympy_latex(f.parse(text))}", width=56.0)
        equation, description = f.equation, f.description
    except UsageError:
        tex, equation, description = Latex(""), "", ""
    return {"name": name, "text": text, "math": tex, "equation": equation,
            "description": description, "overridden": overridden}


def _side_by_side(claim: Claim, name: str, text: str) -> dict:
    """The formula as printed and as corrected, each typeset to half the text width."""
    try:
        f = claim.formula(name)
        printed = display(f"{_symbol(name)} = {sympy_latex(f.parse())}", width=29.0)
        fixed = display(f"{_symbol(name)} = {sympy_latex(f.parse(text))}", width=29.0)
    except UsageError:
        return {"name": name, "equation": "", "printed": Latex(""), "correct": Latex("")}
    where = f"eq. {f.equation}" if f.equation.startswith("(") else f.equation
    return {"name": name, "equation": where, "printed": printed, "correct": fixed}


def _symbol(name: str) -> str:
    """A formula name as a math symbol: A_top -> A_{\\mathrm{top}}."""
    head, _, tail = name.partition("_")
    import sympy

    head_tex = sympy_latex(sympy.Symbol(head)) if head else ""
    if tail and ("_" in head_tex or "^" in head_tex):  # l1_max: {l_{1}}_{max}, not a double one
        head_tex = "{" + head_tex + "}"
    return head_tex + (r"_{\mathrm{" + escape(tail) + "}}" if tail else "")


def correction_view(claim: Claim, verdict: Verdict) -> dict | None:
    if verdict.correction is None:
        return None
    c = verdict.correction
    source = ("derived by the engine" if c["source"] == "derived" else
              "documented (no closed form derived)")
    return {"description": prose_tex(f"{c['description']} [{source}]", cell=True),
            "reason": prose_tex(c["reason"], cell=True),
            "command": f"icl-verify check {claim.id} --json",
            "source": c["source"],
            # refuted with a correction: its tiers did not all pass, so it is proposed, not shown
            # as correct
            "label": "Correct" if verdict.verdict == "corrected" else "Proposed, not confirmed",
            "formulas": [formula_view(claim, name, text) for name, text in c["formulas"].items()],
            "side_by_side": [_side_by_side(claim, name, text)
                             for name, text in c["formulas"].items()],
            "readings": [{"symbol": r["symbol"], "where": r["where"], "why": r["why"],
                          "paper": r["paper_definition"], "read_as": r["read_as"]}
                         for r in c.get("readings", [])],
            "tiers": [{"name": t, "status": r.status, "reason": r.reason}
                      for t, r in (verdict.correction_tiers or {}).items()]}


LONG_DISPLAY = 40  # lines: a longer derived formula is typeset in the appendix


def derivation_steps(verdict: Verdict, appendix: list | None = None) -> list[dict]:
    """The derivation each tier recorded, typeset: title, prose, and a display that fits; with
    ``appendix``, a display longer than LONG_DISPLAY lines goes there (in full) and the step
    refers to it."""
    out = []
    for tier, result in verdict.tiers.items():
        for k, s in enumerate(result.steps):
            latex = str(s.get("latex", "")).strip()
            math = display(latex) if latex else Latex("")
            lines = math.count("\\\\\n") + 1
            if appendix is not None and lines > LONG_DISPLAY:
                math = appendix_ref(
                    appendix, f"long:{_label(verdict.claim)[len('claim:'):]}:{len(out) + 1}",
                    f"{verdict.claim}, derivation step {len(out) + 1}: {s.get('title', '')}",
                    math, f"The derived formula has {lines} lines")
            out.append({"tier": tier, "number": len(out) + 1, "title": s.get("title", ""),
                        "text": prose_tex(s.get("text", "")), "math": math, "source": latex})
    return out


# ------------------------------------------------------------------------------------ evidence
def tier_evidence(tier: str, evidence: Mapping[str, Any], shown: set[str],
                  long: tuple | None = None) -> dict:
    """One tier's evidence: its instance, its plain values, and one block per finding."""
    instance = evidence.get("instance") if isinstance(evidence.get("instance"), dict) else None
    findings, extra = [], {}
    for key, value in evidence.items():
        if (key == "instance" and instance is not None) or key == PAPER_FIGURE_KEY:
            continue  # the paper figure is drawn, not tabulated
        if isinstance(value, dict) and "ok" in value:
            findings.append(finding_view(key, value, shown, long))
        else:
            extra[key] = value
    return {"tier": tier, "instance": instance_view(instance) if instance else None,
            "extra": value_rows(extra, shown, long), "findings": findings}


def finding_view(name: str, value: Mapping[str, Any], shown: set[str],
                 long: tuple | None = None) -> dict:
    rest = {k: v for k, v in value.items() if k != "ok"}
    mc, runs = [], []
    for key, v in list(rest.items()):
        if _is_mc_rows(v):
            mc.append({"key": key, "table": mc_table(v)})
            del rest[key]
        elif _is_runs(v):
            runs.append({"key": key, "table": runs_table(v)})
            del rest[key]
    return {"name": name, "ok": value.get("ok"), "status": _ok_word(value.get("ok")),
            "rows": value_rows(rest, shown, long), "mc": mc, "runs": runs}


def _ok_word(ok: Any) -> str:
    return {True: "holds", False: "fails", None: "undecided"}.get(ok, str(ok))


def _is_mc_rows(v: Any) -> bool:
    return (isinstance(v, list) and bool(v) and all(isinstance(r, dict) for r in v)
            and all({"mean", "se", "ci"} <= set(r) for r in v))


def _is_runs(v: Any) -> bool:
    return (isinstance(v, list) and bool(v) and all(isinstance(r, dict) for r in v)
            and all("curve" in r for r in v))


def instance_view(inst: Mapping[str, Any]) -> dict:
    """Sizes, then Sigma (and its eigen-decomposition) as matrices, then the other entries."""
    sizes = [(k, v) for k, v in inst.items() if isinstance(v, int) and not isinstance(v, bool)]
    mats = [(k, v) for k, v in inst.items() if is_matrix(v) and len(v) <= 8]
    vecs = [(k, v) for k, v in inst.items() if k not in dict(mats)
            and isinstance(v, list) and v and len(v) <= 8 and all(is_scalar(x) for x in v)]
    used = {a for a, _ in sizes + mats + vecs}
    math = r",\quad ".join([f"{_name_tex(k)} = {number(v)}" for k, v in sizes]
                           + [f"{_name_tex(k)} = {matrix(v)}" for k, v in mats]
                           + [f"{_name_tex(k)} = ({', '.join(number(x, 4) for x in v)})"
                              for k, v in vecs])
    rest = [Latex(_key(k) + ": " + value_tex(v, 1)) for k, v in inst.items()
            if k not in used]
    return {"math": display(math, width=70) if math else Latex(""),
            "text": Latex("; ".join(rest)), "same_as": None}


_GREEK = {"Sigma": r"\Sigma", "Lambda": r"\Lambda", "eigenvalues": r"\lambda", "lambda": r"\lambda",
          "gamma": r"\gamma", "sigma": r"\sigma"}


def _name_tex(key: str) -> str:
    if key in _GREEK:
        return _GREEK[key]
    if len(key) <= 2:
        return key
    return r"\text{" + escape(key.replace("_", " ")) + "}"


def value_rows(values: Mapping[str, Any], shown: set[str], long: tuple | None = None) -> list[dict]:
    """(key, typeset value) rows.  A ``*_latex`` string is typeset as a display (``math``), or
    noted as shown when the derivation already displays it; its plain twin ``*`` is dropped."""
    rows = []
    for key, v in values.items():
        if key in _SKIP_KEYS or isinstance(values.get(key + "_latex"), str):
            continue
        if key.endswith("_latex") and isinstance(v, str):
            name = _key(key[:-len("_latex")])
            if any(v.strip() and v.strip() in s for s in shown):
                rows.append({"key": name, "value": escape("shown in the derivation above"),
                             "math": Latex("")})
            else:
                rows.append({"key": name, "value": escape("displayed below the table"),
                             "math": display(v)})
            continue
        value = value_tex(v)
        if long is not None and long[0] is not None and value.count(r"\newline") > 30:
            value = _to_appendix(long, key, value)
        rows.append({"key": _key(key), "value": value, "math": Latex("")})
    return rows


def mc_table(rows: list[dict]) -> dict:
    """Exact value vs Monte Carlo mean, standard error, interval, z and samples."""
    label_key = next((k for k, v in rows[0].items() if isinstance(v, str)), None)
    body = []
    for r in rows:
        lo, hi = r["ci"]
        body.append({
            "label": r.get(label_key, "") if label_key else "",
            "exact": Latex(f"${number(r['exact'])}$") if "exact" in r else escape("--"),
            "mean": Latex(f"${number(r['mean'])}$"),
            "se": Latex(f"${number(r['se'], 3)}$"),
            "ci": Latex(f"$[{number(lo)},\\ {number(hi)}]$"),
            "z": Latex(f"${number(r['z'], 3)}$") if "z" in r else escape("--"),
            "samples": Latex(f"${number(r.get('samples', ''))}$") if "samples" in r else "",
        })
    first = rows[0]
    note = ""
    if "level" in first:
        note = f"confidence level {first['level']}"
        if first.get("comparisons", 1) > 1:
            note += f", Bonferroni over {first['comparisons']} comparisons"
    return {"label": _key(label_key or ""), "rows": body, "note": note}


_RUN_EXCLUDE = {"curve", "distance_curve", "seconds", "reason"}


def runs_table(runs: list[dict]) -> dict:
    """One row per training run: its scalar summary (curves go to the figure)."""
    keys = [k for k in runs[0] if k not in _RUN_EXCLUDE
            and all(k in r and (is_scalar(r[k]) or isinstance(r[k], str)) for r in runs)]
    keys = keys[:8]
    header = [Latex(r"\begin{tabular}[b]{@{}c@{}}" + r"\\".join(escape(w) for w in k.split("_"))
                    + r"\end{tabular}") for k in keys]
    rows = [[value_tex(_short(r[k])) for k in keys] for r in runs]
    return {"header": header, "rows": rows, "spec": "r" * len(keys)}


def _short(v: Any) -> Any:
    if isinstance(v, float):
        return float(f"{v:.4g}")
    return v


# ------------------------------------------------------------------------------------- figures
@dataclass
class Curve:
    label: str
    group: str
    losses: list[float]
    steps: int
    distance: list[float] | None = None


def find_curves(evidence: Mapping[str, Any], path: tuple[str, ...] = ()) -> list[Curve]:
    """Every ``curve`` (a TrainResult summary) in a tier's evidence, with where it was found."""
    out: list[Curve] = []
    if isinstance(evidence, dict):
        if isinstance(evidence.get("curve"), list) and evidence["curve"]:
            label = " / ".join(p.replace("_", " ") for p in path if not p.isdigit())
            method = evidence.get("method")
            run = next((p for p in reversed(path) if p.isdigit()), None)
            out.append(Curve(label=label + (f" ({method})" if method else ""),
                             group=" / ".join(path[:-1] if run is not None else path) or "run",
                             losses=[float(x) for x in evidence["curve"]],
                             steps=int(evidence.get("steps") or len(evidence["curve"])),
                             distance=evidence.get("distance_curve")))
        for k, v in evidence.items():
            if k not in _SKIP_KEYS:
                out.extend(find_curves(v, path + (str(k),)))
    elif isinstance(evidence, list):
        for i, v in enumerate(evidence):
            out.extend(find_curves(v, path + (str(i),)))
    return out


def _steps_axis(curve: Curve):
    import numpy as np

    m = len(curve.losses)
    stride = max(1, round(curve.steps / m))
    if -(-curve.steps // stride) == m:
        return 1 + stride * np.arange(m)
    return np.linspace(1, max(curve.steps, m), m)


def training_figure(verdict: Verdict, out: Path) -> dict | None:
    """Loss curves (left) and the gap to the reference loss (right, log scale) as a vector PDF."""
    result = verdict.tiers.get("train")
    if result is None:
        return None
    curves = find_curves(result.evidence)
    if not curves:
        return None
    import matplotlib
    import numpy as np
    from matplotlib.figure import Figure  # object API: no pyplot, no global backend state

    ref_key = next((k for k in REFERENCE_LOSS_KEYS if _finite(result.evidence.get(k))), None)
    ref = float(result.evidence[ref_key]) if ref_key else None
    has_dist = any(c.distance for c in curves)
    panels = 1 + (ref is not None) + has_dist
    fig = Figure(figsize=(3.2 * panels, 2.7))
    axes = fig.subplots(1, panels, squeeze=False)[0]
    groups = list(dict.fromkeys(c.group for c in curves))
    maps = ["Blues", "Oranges", "Greens", "Purples", "Reds", "Greys"]
    seen: set[str] = set()
    for c in curves:
        members = [d for d in curves if d.group == c.group]
        shade = 0.85 if len(members) == 1 else 0.45 + 0.5 * members.index(c) / (len(members) - 1)
        color = matplotlib.colormaps[maps[groups.index(c.group) % len(maps)]](shade)
        x = _steps_axis(c)
        label = None
        if c.group not in seen:
            seen.add(c.group)
            label = _legend(c, len(members))
        y = np.asarray(c.losses, dtype=float)
        axes[0].plot(x, y, color=color, lw=1.0, alpha=0.85, label=label)
        k = 1
        if ref is not None:
            gap = y - ref
            axes[k].plot(x, np.where(gap > 0, gap, np.nan), color=color, lw=1.0, alpha=0.85)
            k += 1
        if has_dist and c.distance:
            dist = np.asarray(c.distance, dtype=float)
            axes[k].plot(_steps_axis(Curve("", "", list(dist), c.steps)),
                         np.where(dist > 0, dist, np.nan), color=color, lw=1.0, alpha=0.85)
    finite = np.array([x for c in curves for x in c.losses if np.isfinite(x)])
    if finite.size and finite.min() > 0 and finite.max() > 50 * finite.min():
        axes[0].set_yscale("log")
    axes[0].set_ylabel("loss")
    axes[0].set_title("training loss", fontsize=9)
    if ref is not None:
        axes[0].axhline(ref, color="black", ls="--", lw=0.8, label=f"{ref_key.replace('_', ' ')}")
        axes[1].set_yscale("log")
        axes[1].set_ylabel("loss - reference")
        axes[1].set_title("gap to the optimum (log)", fontsize=9)
    if has_dist:
        axes[-1].set_yscale("log")
        axes[-1].set_title("distance to the optimum (log)", fontsize=9)
    for ax in axes:
        ax.set_xscale("log")
        ax.set_xlabel("optimiser step")
        ax.tick_params(labelsize=7)
        ax.xaxis.label.set_size(8)
        ax.yaxis.label.set_size(8)
    fig.legend(loc="lower center", ncol=min(3, len(groups) + (ref is not None)), fontsize=7,
               frameon=False)
    fig.tight_layout(rect=(0, 0.1 + 0.04 * (len(groups) > 2), 1, 1))
    name = f"figures/{verdict.claim.replace('.', '-')}-train.pdf"
    buffer = io.BytesIO()
    fig.savefig(buffer, format="pdf", metadata={"CreationDate": None, "Creator": None,
                                                "Producer": None})
    write_atomic(out / name, buffer.getvalue())
    caption = ("Train tier: the loss per optimiser step of every run recorded in the evidence "
               "(log step axis)")
    if ref is not None:
        caption += (f"; right: the gap to the {ref_key.replace('_', ' ')} {ref:.6g} on a log "
                    f"scale (points at or below it are not drawn; a sampled-prompt loss is a "
                    f"noisy batch estimate and can dip below)")
    if has_dist:
        caption += "; last panel: the recorded distance to the optimum"
    return {"path": name, "caption": caption + ".", "width": f"{min(1.0, 0.5 * panels):.2f}"}


def _legend(c: Curve, count: int) -> str:
    label = c.group.replace("_", " ")
    label = label.split(" / ")[0]
    method = c.label.rsplit("(", 1)[-1].rstrip(")") if "(" in c.label else ""
    text = f"{label} ({method})" if method else label
    return text + (f", {count} runs" if count > 1 else "")


def _finite(v: Any) -> bool:
    try:
        import math

        return v is not None and not isinstance(v, bool) and math.isfinite(float(v))
    except (TypeError, ValueError):
        return False


# ------------------------------------------------------------------------------------ templates
def _finalize(value: Any) -> str:
    """Every value printed by a template: LaTeX passes, anything else is escaped, with ASCII
    infinity, arrows and relations ("C -> oo", "<=") set as symbols."""
    if value is None:
        return ""
    if isinstance(value, Latex):
        return value
    return _with_math_symbols(escape)(str(value))


def environment():
    import jinja2

    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        block_start_string=r"\BLOCK{", block_end_string="}",
        variable_start_string=r"\VAR{", variable_end_string="}",
        comment_start_string=r"\#{", comment_end_string="}",
        line_statement_prefix="%%", line_comment_prefix="%#",
        trim_blocks=True, lstrip_blocks=True, autoescape=False, keep_trailing_newline=True,
        undefined=jinja2.StrictUndefined, finalize=_finalize)
    env.filters.update({
        "num": lambda v, digits=6: Latex(f"${number(v, digits)}$"),
        "code": lambda v, limit=None: code(v, limit),
        "breakable": lambda v, limit=None: breakable(v, limit),
        # a claim id in a narrow column: may break after its dot and each underscore
        "claim_id": lambda v: Latex(r"\allowbreak{}".join(
            escape(part) for part in re.split(r"(?<=[._])", str(v)))),
        "verdict": verdict_tex,
        "status": status_tex,
        "seconds": lambda v: Latex(f"{float(v):.1f}\\,s"),
        "status_word": lambda w: Latex(r"\textcolor{v-" + _WORD_COLOR.get(w, "skipped") + "}{"
                                       + escape(w) + "}"),
        "join_cells": lambda cells: Latex(" & ".join(_finalize(x) for x in cells)),
    })
    return env


def render(template: str, **context) -> str:
    return environment().get_template(template).render(**context)


_WORD_COLOR = {"holds": "pass", "fails": "fail", "undecided": "error"}


def verdict_tex(verdict: str) -> Latex:
    return Latex(r"\verdict{" + escape(verdict) + "}")


def status_tex(status: str) -> Latex:
    """A tier status in its colour, in the word a reader reads (``output.status_word``)."""
    word = status_word(status)
    if word == status:
        return Latex(r"\status{" + escape(status) + "}")
    # another word than the colour's name; hyphenated, so that it fits a table cell
    return Latex(r"\textcolor{v-" + escape(status) + r"}{\hspace{0pt}"
                 + escape(word).replace("undecided", r"un\-de\-cided") + "}")


def derivation_tex(verdict: Verdict) -> str:
    """The derivation section of one claim alone (the golden fragments test this)."""
    return render("derivation.tex.j2", c={"derivation": derivation_steps(verdict)})
