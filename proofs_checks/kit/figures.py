"""A paper's figure as data, re-drawn from the engine's own numbers (issue 36).

A figure claim's tier puts ``PaperFigure(...).to_evidence()`` in its evidence under
``EVIDENCE_KEY``; the report (``verify.paper_figures``) draws it with the paper's axes.  Every
point is what the tier computed: ``kind`` says how (``exact``: the derived quantity, evaluated
exactly or from an exact polynomial; ``monte carlo``: an estimate with its interval in
``lower``/``upper``; ``trained``: an optimiser's run, a band over runs in ``lower``/``upper``;
``paper's claim``: the trend the paper asserts, drawn beside what the engine computed where the
engine finds the paper's reading false).  Plain data: lists of floats, non-finite values None.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

EVIDENCE_KEY = "paper_figure"  # the key ``verify.paper_figures`` looks for in a tier's evidence
KINDS = ("exact", "monte carlo", "trained", "paper's claim")


def floats(values: Iterable[Any]) -> list[float | None]:
    """``values`` as JSON floats: None where a value is missing or not finite."""
    out: list[float | None] = []
    for v in values:
        try:
            x = float(v)
        except (TypeError, ValueError, OverflowError):
            out.append(None)
            continue
        out.append(x if math.isfinite(x) else None)
    return out


@dataclass(frozen=True)
class Series:
    """One curve or set of points; ``lower``/``upper`` an interval (Monte Carlo) or a band over
    runs (trained); ``group`` names the series whose colour it shares (a claim beside its
    computed curve); ``points`` draws markers only."""

    label: str
    x: Sequence[float]
    y: Sequence[float]
    kind: str = "exact"
    lower: Sequence[float] | None = None
    upper: Sequence[float] | None = None
    group: str = ""
    points: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"series kind {self.kind!r} is not one of {KINDS}")
        if len(self.x) != len(self.y):
            raise ValueError(f"series {self.label!r}: {len(self.x)} x for {len(self.y)} y")
        for band in (self.lower, self.upper):
            if band is not None and len(band) != len(self.y):
                raise ValueError(f"series {self.label!r}: an interval of another length")

    def to_evidence(self) -> dict:
        out = {"label": self.label, "kind": self.kind, "x": floats(self.x), "y": floats(self.y),
               "group": self.group or self.label, "points": self.points}
        if self.lower is not None and self.upper is not None:
            out["lower"], out["upper"] = floats(self.lower), floats(self.upper)
        return out


@dataclass(frozen=True)
class Mark:
    """A reference value across the panel: a horizontal line (``axis="y"``: a baseline, an
    optimum) or a vertical one (``axis="x"``: a threshold the paper names)."""

    label: str
    value: float
    axis: str = "y"
    kind: str = "exact"

    def to_evidence(self) -> dict:
        return {"label": self.label, "value": floats([self.value])[0], "axis": self.axis,
                "kind": self.kind}


@dataclass(frozen=True)
class Note:
    """A short text at a point of the panel (where the engine's curve leaves the paper's)."""

    text: str
    x: float
    y: float
    kind: str = "paper's claim"
    arrow: bool = True  # an arrow from the text to (x, y), or the text at (x, y)

    def to_evidence(self) -> dict:
        x, y = floats([self.x, self.y])
        return {"text": self.text, "x": x, "y": y, "kind": self.kind, "arrow": self.arrow}


@dataclass(frozen=True)
class Panel:
    """One set of axes, labelled as the paper labels them (matplotlib mathtext allowed)."""

    title: str
    x_label: str
    y_label: str
    series: Sequence[Series]
    marks: Sequence[Mark] = ()
    notes: Sequence[Note] = ()
    x_log: bool = False
    y_log: bool = False
    x_range: Sequence[float] | None = None  # the paper's x range, where the data covers less

    def to_evidence(self) -> dict:
        return {"title": self.title, "x_label": self.x_label, "y_label": self.y_label,
                "x_log": self.x_log, "y_log": self.y_log,
                "x_range": None if self.x_range is None else floats(self.x_range),
                "series": [s.to_evidence() for s in self.series],
                "marks": [m.to_evidence() for m in self.marks],
                "notes": [n.to_evidence() for n in self.notes]}


@dataclass(frozen=True)
class PaperFigure:
    """The paper's figure ``figure`` ("Fig. 3") as one tier computed it: its panels, where the
    numbers come from (``source``: the computation, the sizes, exact or Monte Carlo), and, where
    the engine's numbers contradict the paper's reading, what the paper claimed
    (``claim_note``)."""

    figure: str
    panels: Sequence[Panel]
    source: str
    claim_note: str = ""

    def to_evidence(self) -> dict:
        return {"figure": self.figure, "source": self.source, "claim_note": self.claim_note,
                "panels": [p.to_evidence() for p in self.panels]}


def figure_entry(build: Callable[[], PaperFigure]) -> dict:
    """``{EVIDENCE_KEY: build().to_evidence()}`` for a tier's extra evidence.  The figure is a
    by-product of a check: where it cannot be drawn (a ``--set`` or a mutant that leaves a
    quantity undefined) the entry says why instead, and the check's decision stands."""
    try:
        return {EVIDENCE_KEY: build().to_evidence()}
    except Exception as exc:  # noqa: BLE001 - never a tier error for a drawing
        return {EVIDENCE_KEY + "_not_drawn": f"{type(exc).__name__}: {exc}"}


# ----------------------------------------------------------------------------------- helpers
def across_runs(rows: Sequence[Sequence[Any]]) -> tuple[list, list, list]:
    """Mean, min and max over runs of per-step values (``rows[run][step]``), skipping missing
    and non-finite entries; None where no run has a value."""
    width = max((len(r) for r in rows), default=0)
    mean, low, high = [], [], []
    for i in range(width):
        vals = [v for v in floats(r[i] for r in rows if i < len(r)) if v is not None]
        mean.append(sum(vals) / len(vals) if vals else None)
        low.append(min(vals) if vals else None)
        high.append(max(vals) if vals else None)
    return mean, low, high


def running_min(values: Sequence[Any]) -> list[float | None]:
    """The least value so far at each index: the highest a non-increasing curve through the
    first value can stay (the paper's "keeps decreasing" beside a computed curve)."""
    out: list[float | None] = []
    best = None
    for v in floats(values):
        if v is not None:
            best = v if best is None else min(best, v)
        out.append(best)
    return out


def curve_steps(points: int, steps: int) -> list[int]:
    """The optimiser steps at which a recorded curve of ``points`` values (every k-th loss of
    ``steps``, as ``TrainResult.summary`` keeps them) was taken."""
    stride = max(1, round(steps / points)) if points else 1
    return [1 + stride * i for i in range(points)]


def per_index(steps: Sequence[Any], values: Sequence[Sequence[Sequence[Any]]], label: str,
              kind: str = "trained") -> list[Series]:
    """One series per index i of a per-step, per-run vector (``values[step][run][i]``, e.g. a
    metric per layer recorded for several seeds): the mean over the runs with a band from the
    least to the largest; ``label`` is formatted with ``i``."""
    if not values or not values[0]:
        return []
    runs, width = len(values[0]), len(values[0][0])
    out = []
    for i in range(width):
        mean, low, high = across_runs([[v[b][i] for v in values] for b in range(runs)])
        out.append(Series(label.format(i=i), list(steps), mean, kind, low, high, group=f"{i}"))
    return out
