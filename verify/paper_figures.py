"""The papers' figures re-drawn in the report from the engine's own numbers (issue 36).

A figure claim's tier leaves ``{"paper_figure": {figure, source, claim_note, panels: [...]}}``
in its evidence (built by ``proofs_checks.kit.figures``; plain JSON here, so the report needs no
paper code).  ``paper_figure`` draws the panels of every tier into one vector PDF,
``figures/<claim>-paper.pdf``, with the paper's axes, and writes a caption that says where each
panel's numbers come from and, where the verdict is not ``verified``, what the paper claimed.

Styles by kind: exact values as solid lines (open diamonds for single points), Monte Carlo
estimates as markers with their intervals as error bars, trained runs dotted with squares and a
band over the runs, the paper's claim dashed (red, or in the colour of the curve it accompanies);
reference values (``marks``) as black dash patterns across the panel.
"""
from __future__ import annotations

import io
import math
from functools import lru_cache
from pathlib import Path
from typing import Any, Mapping

from .outdir import write_atomic
from .verdict import Verdict

KEY = "paper_figure"  # = proofs_checks.kit.figures.EVIDENCE_KEY
CLAIM_COLOR = "#c0392b"
_COLUMNS = 3
_PANEL_INCHES = 2.3  # three panels fill the report's 16.6 cm text width at their own size


def figures_in(verdict: Verdict) -> list[tuple[str, Mapping[str, Any]]]:
    """(tier, figure) for every tier whose evidence holds a paper figure, in tier order."""
    out = []
    for tier, result in verdict.tiers.items():
        fig = (result.evidence or {}).get(KEY)
        if isinstance(fig, dict) and fig.get("panels"):
            out.append((tier, fig))
    return out


def paper_figure(verdict: Verdict, out: Path) -> dict | None:
    """Draw the claim's paper figure (every tier's panels, one PDF); returns the template's
    view ``{path, caption, width}``, or None where no tier left one."""
    found = figures_in(verdict)
    if not found:
        return None
    panels = [(tier, p) for tier, fig in found for p in fig["panels"]]
    fig = _draw(panels)
    name = f"figures/{verdict.claim.replace('.', '-')}-paper.pdf"
    buffer = io.BytesIO()
    fig.savefig(buffer, format="pdf", metadata={"CreationDate": None, "Creator": None,
                                                "Producer": None})
    (out / name).parent.mkdir(parents=True, exist_ok=True)
    write_atomic(out / name, buffer.getvalue())
    columns = min(_COLUMNS, len(panels))
    return {"path": name, "caption": caption(verdict, found),
            "width": f"{min(1.0, max(0.45, _PANEL_INCHES * columns / 6.5)):.2f}"}


def caption(verdict: Verdict, found: list[tuple[str, Mapping[str, Any]]]) -> str:
    """Which paper figure, where each panel's numbers come from, and the paper's claim where
    the verdict is not verified."""
    names = list(dict.fromkeys(str(f.get("figure", "")) for _, f in found if f.get("figure")))
    parts = [f"The paper's {' / '.join(names) or 'figure'} re-drawn from the engine's own "
             f"computation, with the paper's axes"]
    letter = 0
    for tier, fig in found:
        count = len(fig["panels"])
        span = _letters(letter, count)
        letter += count
        parts.append(f"{span} {tier} tier: {fig.get('source', '')}".rstrip(" .:"))
    kinds = {s.get("kind") for _, f in found for p in f["panels"] for s in p.get("series", [])}
    kinds |= {m.get("kind") for _, f in found for p in f["panels"] for m in p.get("marks", [])}
    styles = [text for kind, text in _STYLES if kind in kinds]
    if styles:
        parts.append(styles[0][0].upper() + "; ".join(styles)[1:])
    if verdict.verdict != "verified":
        claims = [str(f["claim_note"]) for _, f in found if f.get("claim_note")]
        said = f"The paper claims: {'; '.join(dict.fromkeys(claims))}. " if claims else ""
        parts.append(f"{said}Verdict: {verdict.verdict}")
    return ". ".join(p.rstrip(". ") for p in parts) + "."


_STYLES = (("exact", "solid lines and open diamonds: exact values"),
           ("monte carlo", "markers with error bars: Monte Carlo estimates with their intervals"),
           ("trained", "dotted lines with squares: trained runs (a band: their spread over runs)"),
           ("paper's claim", "dashed: the paper's claim (red, or in the colour of the curve it "
                             "accompanies)"))


def _letters(start: int, count: int) -> str:
    first = chr(ord("a") + start)
    return f"({first})" if count == 1 else f"({first})-({chr(ord('a') + start + count - 1)})"


# ------------------------------------------------------------------------------------- drawing
# the layout in inches, fixed rather than measured (tight_layout draws every text twice)
_LEFT, _RIGHT, _TOP, _BOTTOM, _AXES_HEIGHT, _LEGEND_LINE = 0.62, 0.1, 0.36, 0.52, 1.45, 0.115


def _draw(panels: list[tuple[str, Mapping[str, Any]]]):
    from matplotlib.figure import Figure  # object API: no pyplot, no global backend state

    columns = min(_COLUMNS, len(panels))
    rows = -(-len(panels) // columns)
    lines = [max(_legend_rows(p) for _, p in panels[r * columns:(r + 1) * columns])
             for r in range(rows)]
    heights = [_TOP + _AXES_HEIGHT + _BOTTOM + _LEGEND_LINE * n for n in lines]
    width, height = _PANEL_INCHES * columns, sum(heights)
    fig = Figure(figsize=(width, height))
    for i, (tier, panel) in enumerate(panels):
        r, c = divmod(i, columns)
        top = sum(heights[:r]) + _TOP
        ax = fig.add_axes(((c * _PANEL_INCHES + _LEFT) / width,
                           1 - (top + _AXES_HEIGHT) / height,
                           (_PANEL_INCHES - _LEFT - _RIGHT) / width, _AXES_HEIGHT / height))
        _panel(ax, panel, f"({chr(ord('a') + i)}) {tier}")
    return fig


def _legend_rows(panel: Mapping[str, Any]) -> int:
    """The lines a panel's legend takes below its axes."""
    labels = [str(x.get("label")) for x in [*panel.get("series", []), *panel.get("marks", [])]
              if x.get("label")]
    return -(-len(labels) // _legend_columns(labels))


def _legend_columns(labels: list) -> int:
    """Two columns for five entries or more where they are short enough to sit side by side."""
    return 2 if len(labels) > 4 and max(len(x) for x in labels) <= 24 else 1


def _nan(values: Any) -> list[float]:
    out = []
    for v in values or []:
        try:
            x = float(v)
        except (TypeError, ValueError):
            x = math.nan
        out.append(x if math.isfinite(x) else math.nan)
    return out


def _panel(ax, panel: Mapping[str, Any], prefix: str) -> None:
    """One panel: its series by kind, its marks and notes, the paper's axes, a legend below."""
    from matplotlib import colormaps

    palette = colormaps["tab10"]
    groups = list(dict.fromkeys(s.get("group") or s.get("label", "")
                                for s in panel.get("series", [])
                                if s.get("kind") != "paper's claim"))
    color_of = {g: palette(i % 10) for i, g in enumerate(groups)}
    logs = (bool(panel.get("x_log")), bool(panel.get("y_log")))
    for s in panel.get("series", []):
        _series(ax, s, color_of.get(s.get("group") or s.get("label", ""), CLAIM_COLOR), logs)
    _marks(ax, panel.get("marks", []), logs)
    _notes(ax, panel.get("notes", []))
    _axes(ax, panel, prefix, logs)


def _positive(values: Any, log: bool):
    import numpy as np

    a = np.asarray(_nan(values), dtype=float)
    return np.where(a > 0, a, np.nan) if log else a


def _series(ax, s: Mapping[str, Any], color, logs: tuple[bool, bool]) -> None:
    """Exact: a solid line (open diamonds for points); Monte Carlo: markers with error bars;
    trained: a dotted line with squares and a band; the paper's claim: dashed."""
    import numpy as np

    x, y = _positive(s.get("x"), logs[0]), _positive(s.get("y"), logs[1])
    if not (np.isfinite(x).any() and np.isfinite(y).any()):
        return
    kind, label = s.get("kind", "exact"), _text(s.get("label", ""))
    band = s.get("lower") is not None and s.get("upper") is not None
    lo, hi = (_positive(s.get("lower"), logs[1]), _positive(s.get("upper"), logs[1])) if band \
        else (None, None)
    if kind == "paper's claim":
        ax.plot(x, y, lw=1.2, color=color, alpha=0.9, label=label, dashes=(4, 2))
    elif kind == "monte carlo" and band:
        err = np.vstack([np.clip(y - lo, 0, None), np.clip(hi - y, 0, None)])
        ax.errorbar(x, y, yerr=np.where(np.isfinite(err), err, 0.0), fmt="o", ms=3.5,
                    capsize=2.5, lw=0.9, color=color, label=label)
    elif kind == "monte carlo":
        ax.plot(x, y, "o", ms=3.5, color=color, label=label)
    elif kind == "trained":
        ax.plot(x, y, ls="" if s.get("points") else ":", marker="s", ms=2.8, lw=1.1,
                color=color, label=label)
        if band:
            ax.fill_between(x, lo, hi, color=color, alpha=0.18, lw=0)
    elif s.get("points"):  # exact points, open: a trained or estimated point inside shows
        ax.plot(x, y, "D", ms=6, mfc="none", mew=1.2, color=color, label=label)
    else:
        ax.plot(x, y, "-", lw=1.4, color=color, label=label)


_MARK_DASHES = ((0, (6, 2, 1, 2)), (0, (1, 1.5)), (0, (8, 2)), (0, (3, 1, 1, 1, 1, 1)))


def _marks(ax, marks: list, logs: tuple[bool, bool]) -> None:
    """Reference values across the panel: black, each its own dash; the paper's claim red."""
    for k, m in enumerate(marks):
        value = _nan([m.get("value")])[0]
        vertical = m.get("axis") == "x"
        if not math.isfinite(value) or (logs[0 if vertical else 1] and value <= 0):
            continue
        claim = m.get("kind") == "paper's claim"
        (ax.axvline if vertical else ax.axhline)(
            value, color=CLAIM_COLOR if claim else "black", lw=1.0,
            ls=(0, (4, 2)) if claim else _MARK_DASHES[k % len(_MARK_DASHES)],
            label=_text(m.get("label", "")))


def _notes(ax, notes: list) -> None:
    for note in notes:
        x, y = _nan([note.get("x"), note.get("y")])
        if not (math.isfinite(x) and math.isfinite(y)):
            continue
        color = CLAIM_COLOR if note.get("kind") == "paper's claim" else "black"
        text = _text(note.get("text", ""))
        if note.get("arrow", True):
            ax.annotate(text, xy=(x, y), xytext=(8, -22), textcoords="offset points",
                        fontsize=6, ha="left", color=color,
                        arrowprops=dict(arrowstyle="->", lw=0.7, color=color))
        else:
            ax.text(x, y, text, fontsize=6, ha="left", va="center", color=color)


def _axes(ax, panel: Mapping[str, Any], prefix: str, logs: tuple[bool, bool]) -> None:
    """Scales, range and ticks, the labels as the paper writes them, the legend below."""
    from matplotlib.ticker import MaxNLocator
    from matplotlib.transforms import offset_copy

    for log, axis, scale, limits in ((logs[0], ax.xaxis, ax.set_xscale, ax.get_xlim),
                                     (logs[1], ax.yaxis, ax.set_yscale, ax.get_ylim)):
        if log:
            scale("log")
            _decades_only(axis, limits())
    span = _nan(panel.get("x_range") or [])
    if len(span) == 2 and all(math.isfinite(v) for v in span):
        pad = 0 if logs[0] else 0.04 * (span[1] - span[0])
        ax.set_xlim(span[0] - pad, span[1] + pad)
    xs = [v for s in panel.get("series", []) for v in _nan(s.get("x"))]
    if not logs[0] and xs and all(math.isfinite(v) and v.is_integer() for v in xs):
        ax.xaxis.set_major_locator(MaxNLocator(nbins=6, integer=True))
    ax.set_title(_wrap(_text(f"{prefix}: {panel.get('title', '')}")), fontsize=7)
    ax.set_xlabel(_text(panel.get("x_label", "")), fontsize=7)
    ax.set_ylabel(_text(panel.get("y_label", "")), fontsize=7)
    ax.tick_params(labelsize=6)
    handles, labels = ax.get_legend_handles_labels()
    if handles:  # below the axes, under the x label: a legend never covers the curves
        below = 31 if "$" in str(panel.get("x_label", "")) else 25  # points
        ax.legend(fontsize=5.5, frameon=False, loc="upper center", bbox_to_anchor=(0.5, 0.0),
                  bbox_transform=offset_copy(ax.transAxes, fig=ax.figure, y=-below,
                                             units="points"),
                  ncol=_legend_columns(labels), borderaxespad=0.0, handlelength=2.2,
                  columnspacing=1.0)


def _wrap(text: str, width: int = 38) -> str:
    """A plain title on lines of ``width`` characters (mathtext cannot break lines)."""
    if "$" in text:
        return text
    import textwrap

    return "\n".join(textwrap.wrap(text, width)) or text


def _decades_only(axis, limits) -> None:
    """On a log axis showing two powers of ten or more, label those only; on a shorter one,
    label 2 and 5 times the powers of ten as plain numbers (the default writes every minor
    tick as 6 x 10^-1, and they overlap)."""
    from matplotlib.ticker import FuncFormatter, LogLocator, NullFormatter

    lo, hi = sorted(limits)
    if not lo > 0:
        return
    if math.floor(math.log10(hi)) - math.ceil(math.log10(lo)) >= 1:
        axis.set_minor_formatter(NullFormatter())
        return
    plain = FuncFormatter(lambda v, _: f"{v:g}")
    axis.set_minor_locator(LogLocator(subs=(2.0, 5.0)))
    axis.set_minor_formatter(plain)
    axis.set_major_formatter(plain)


def _text(text: Any) -> str:
    """A label as matplotlib draws it: mathtext where it parses, the plain text otherwise."""
    text = str(text)
    return _checked_math(text) if "$" in text else text


@lru_cache(maxsize=512)
def _checked_math(text: str) -> str:
    from matplotlib.mathtext import MathTextParser

    try:
        MathTextParser("path").parse(text)
    except ValueError:
        return text.replace("$", r"\$")
    return text
