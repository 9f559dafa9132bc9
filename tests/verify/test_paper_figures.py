"""The papers' figures re-drawn in the report (issue 36): every figure claim of the four papers
leaves a ``paper_figure`` in its evidence at --budget quick (the symbolic and numeric tiers
where the claim has them; the train-only claims from their train tier at a tiny budget, or
from ahn2023's Figs. 3 and 4 tier functions on a small recorded run), the report draws it to
figures/<claim>-paper.pdf and includes it, and the figures whose reading the engine refutes
(yang2024 Fig. 3, gatmiry2024 Fig. 3) draw the paper's claim beside the computed curve."""
import math

import pytest

from proofs_checks.kit.figures import (EVIDENCE_KEY, KINDS, Mark, Note, Panel, PaperFigure, Series,
                                       across_runs, curve_steps, figure_entry, per_index,
                                       running_min)
from verify.paper_figures import KEY, figures_in, paper_figure
from verify.registry import find
from verify.report import write_report
from verify.runner import check_claim

SYMBOLIC_NUMERIC = ("xie2025.fig2", "xie2025.fig3", "xie2025.fig4", "xie2025.fig5",
                    "gatmiry2024.fig1", "gatmiry2024.fig2", "gatmiry2024.fig3",
                    "gatmiry2024.fig4", "yang2024.fig3")
TRAIN_ONLY = ("ahn2023.fig1", "ahn2023.fig2", "ahn2023.fig3", "ahn2023.fig4", "yang2024.fig2",
              "yang2024.fig4", "yang2024.fig5")
REFUTED_READINGS = {"yang2024.fig3": "numeric", "gatmiry2024.fig3": "symbolic"}


def _eq13_run() -> dict:
    """A small model-(13) exact-loss run as ``ahn2023.figures_sec61.train_eq13`` returns it (two
    layers, two seeds, three recorded steps)."""
    def run(k: int) -> dict:
        return {"seed_index": k, "final_loss": 0.41 + 0.01 * k, "dist_whitened": [0.03, 0.05],
                "dist_plain": [0.7, 0.8], "scale_whitened": [0.6, 2.6], "frobenius_norm": [3, 9],
                "dist_B": [0.02], "scale_B": [0.9], "status": "converged", "reason": "",
                "method": "lbfgs", "steps": 400,
                "critical_point_of_g": {"value": 0.41 + 0.01 * k,
                                        "relative_distance_from_start": 0.01}}

    curves = [{"step": s, "loss": [l, l * 1.1], "dist_whitened": [[w, w], [w, 2 * w]],
               "dist_B": [[w], [1.5 * w]]}
              for s, l, w in ((1, 3.0, 0.9), (25, 0.6, 0.2), (400, 0.41, 0.03))]
    return {"runs": [run(0), run(1)], "curves": curves,
            "g_star": {"g_star": 0.4, "point": [0.35, 2.8, 0.9]}, "n": 10, "d": 5, "layers": 2,
            "seeds": 2, "steps": 400, "dist_threshold": 0.1, "runtime": "cpu float64",
            "objective": "exact", "dist_sigma_inv": [0.78, 0.8], "fixed_batch_three_layers": []}


@pytest.fixture(scope="module")
def verdicts():
    """Every figure claim at --budget quick: symbolic and numeric tiers, or the train tier at a
    tiny budget (ahn2023 Figs. 3, 4 on a recorded run)."""
    from proofs_checks.ahn2023 import figures as ahn, figures_sec61 as ahn61
    from proofs_checks.yang2024 import figures as yang, training as yang_training

    out = {cid: check_claim(find(cid), tiers=("symbolic", "numeric"), budget="quick")
           for cid in SYMBOLIC_NUMERIC}
    with pytest.MonkeyPatch.context() as mp:
        mp.setitem(ahn.EQ9_BUDGETS, "quick", dict(seeds=1, steps=6, batch=100, sampled_seeds=0,
                                                  sampled_steps=1))
        run = _eq13_run()
        mp.setattr(ahn61, "train_eq13", lambda *args: run)
        mp.setitem(yang_training.TRAIN_BUDGET, "quick", {"steps": 30, "lr": 0.01})
        mp.setitem(yang.FIG4_STEPS, "quick", 40)
        mp.setitem(yang.FIG4_STARTS, "quick", 1)
        mp.setitem(yang.FIG5_BUDGET, "quick", dict(yang.FIG5_BUDGET["quick"], steps=10, batch=8))
        ahn.train_eq9.cache_clear()
        try:
            out.update({cid: check_claim(find(cid), tiers=("train",), budget="quick")
                        for cid in TRAIN_ONLY})
        finally:
            ahn.train_eq9.cache_clear()
    return out


def _panels(verdict) -> list:
    return [p for _, fig in figures_in(verdict) for p in fig["panels"]]


def test_the_key_is_the_kits():
    assert EVIDENCE_KEY == KEY == "paper_figure"


@pytest.mark.parametrize("claim", SYMBOLIC_NUMERIC + TRAIN_ONLY)
def test_every_figure_claim_carries_its_figure(verdicts, claim):
    v = verdicts[claim]
    found = figures_in(v)
    assert found, f"{claim}: no tier left a paper figure ({ {t: r.status for t, r in v.tiers.items()} })"
    for tier, fig in found:
        assert fig["figure"].startswith("Fig. ") and fig["source"]
        for panel in fig["panels"]:
            assert panel["x_label"] and panel["y_label"] and panel["series"]
            for s in panel["series"]:
                assert s["kind"] in KINDS and len(s["x"]) == len(s["y"])
                assert any(y is not None for y in s["y"]), f"{claim} {tier}: {s['label']} is empty"
                assert all(y is None or math.isfinite(y) for y in s["y"])


@pytest.mark.parametrize("claim, tier", sorted(REFUTED_READINGS.items()))
def test_a_refuted_reading_draws_the_papers_claim(verdicts, claim, tier):
    v = verdicts[claim]
    assert v.verdict == "refuted"
    fig = v.tiers[tier].evidence[KEY]
    assert fig["claim_note"]
    claims = [s for p in fig["panels"] for s in p["series"] if s["kind"] == "paper's claim"]
    computed = [s for p in fig["panels"] for s in p["series"] if s["kind"] != "paper's claim"]
    assert claims and computed
    # the claim is drawn where the computed curve leaves it: they differ somewhere
    assert any(a != b for c in claims for s in computed if s["x"] == c["x"]
               for a, b in zip(c["y"], s["y"]))


def test_the_symbolic_figures_are_exact_and_the_numeric_ones_carry_intervals(verdicts):
    kinds = {(cid, tier): {s["kind"] for p in fig["panels"] for s in p["series"]}
             for cid, v in verdicts.items() for tier, fig in figures_in(v)}
    assert all(k <= {"exact", "paper's claim"} for (cid, tier), k in kinds.items()
               if tier == "symbolic")
    estimates = [s for (cid, tier) in kinds if tier == "numeric"
                 for p in verdicts[cid].tiers[tier].evidence[KEY]["panels"] for s in p["series"]
                 if s["kind"] == "monte carlo"]
    assert estimates and all("lower" in s and "upper" in s for s in estimates)
    assert all(lo is None or lo <= y <= hi for s in estimates
               for lo, y, hi in zip(s["lower"], s["y"], s["upper"]) if y is not None)


def test_the_report_draws_and_includes_every_figure(verdicts, tmp_path):
    ids = list(verdicts)
    tex = write_report([find(cid) for cid in ids], [verdicts[cid] for cid in ids], tmp_path)
    text = tex.read_text()
    for cid in ids:
        path = f"figures/{cid.replace('.', '-')}-paper.pdf"
        assert (tmp_path / path).read_bytes().startswith(b"%PDF"), cid
        assert path in text, cid
    # the figure sits in the claim's section above the training figure, and its data is drawn,
    # not tabulated among the evidence
    section = text[text.index(r"\texttt{yang2024.fig2}"):]
    assert section.index("yang2024-fig2-paper.pdf") < section.index("yang2024-fig2-train.pdf")
    assert "paper\\_figure" not in text and "paper_figure" not in text
    # a refuted reading's caption says what the paper claimed
    assert "The paper claims: the closer N is to m" in text


def test_the_drawing_is_deterministic(verdicts, tmp_path):
    v = verdicts["gatmiry2024.fig3"]
    first = paper_figure(v, tmp_path / "a")
    second = paper_figure(v, tmp_path / "b")
    assert first == second
    assert (tmp_path / "a" / first["path"]).read_bytes() == \
        (tmp_path / "b" / second["path"]).read_bytes()
    assert b"CreationDate" not in (tmp_path / "a" / first["path"]).read_bytes()


# ---------------------------------------------------------------------------------- data model
def test_evidence_is_plain_json_with_non_finite_values_as_null():
    import json

    fig = PaperFigure("Fig. 9", (Panel("t", "x", "$y$", (
        Series("a", [1, 2, 3], [1.0, float("nan"), float("inf")], "monte carlo",
               [0.5, None, 1.0], [1.5, None, 2.0]),
        Series("claim", [1, 3], [1.0, 0.5], "paper's claim", group="a")),
        (Mark("m", float("nan")),), (Note("n", 2, 1.0),)),), "source", "claim")
    ev = fig.to_evidence()
    assert json.loads(json.dumps(ev, allow_nan=False)) == ev
    a, claim = ev["panels"][0]["series"]
    assert a["y"] == [1.0, None, None] and a["lower"] == [0.5, None, 1.0]
    assert claim["group"] == "a" and ev["panels"][0]["marks"][0]["value"] is None
    with pytest.raises(ValueError):
        Series("bad", [1], [1.0], "guessed")
    with pytest.raises(ValueError):
        Series("bad", [1, 2], [1.0])


def test_helpers():
    assert running_min([3, 2, 2.5, None, 1]) == [3, 2, 2, 2, 1]
    assert across_runs([[1, 2], [3, None, 5]]) == ([2.0, 2.0, 5.0], [1.0, 2.0, 5.0],
                                                   [3.0, 2.0, 5.0])
    assert curve_steps(3, 30) == [1, 11, 21]
    layers = per_index([1, 5], [[[0.5, 1.0], [0.7, 2.0]], [[0.1, 0.2], [0.3, 0.4]]], "A{i}")
    assert [s.label for s in layers] == ["A0", "A1"]
    assert layers[1].y == pytest.approx([1.5, 0.3]) and layers[1].lower == [1.0, 0.2]


def test_a_figure_that_cannot_be_drawn_leaves_the_check_alone():
    fig = PaperFigure("Fig. 1", (Panel("t", "x", "y", (Series("a", [1], [2.0]),)),), "s")
    assert figure_entry(lambda: fig) == {EVIDENCE_KEY: fig.to_evidence()}
    entry = figure_entry(lambda: 1 / 0)
    assert list(entry) == [EVIDENCE_KEY + "_not_drawn"] and "ZeroDivisionError" in str(entry)
