"""yang2024 Sec. 4, lines 337 and 349: training claims on the number of heads
(proofs_checks/yang2024/head_training.py).  They decide only at --budget paper; here: their quick
verdicts, the divergence criterion, and the training code run small (stand-in findings only)."""
import math

import pytest

from proofs_checks.yang2024 import head_training as ht
from proofs_checks.yang2024.setting import few_threads
from verify.claim import BUDGETS, Context
from verify.registry import find
from verify.runner import check_claim

IDS = ("yang2024.fig4_divergence", "yang2024.fig5_heads_speed")
SMALL = {"K": 12, "d": 6, "m": 3, "N": 4}


@pytest.mark.parametrize("cid", IDS)
def test_quick_is_inconclusive_without_tiers(cid):
    v = check_claim(find(cid), tiers=("symbolic", "numeric"), budget="quick", seed=0)
    assert v.verdict == "inconclusive", v.as_dict()


@pytest.mark.parametrize("cid", IDS)
def test_quick_train_tier_says_paper_budget(cid):
    v = check_claim(find(cid), tiers=("train",), budget="quick", seed=0, device="cpu")
    assert v.verdict == "inconclusive", v.as_dict()
    tr = v.tiers["train"]
    assert tr.status == "skipped" and "--budget paper" in tr.reason
    assert list(tr.evidence) == ["paper_setting"]  # no training below --budget paper


def test_divergence_criterion():
    assert ht.divergence([1.0, 0.5, float("nan")])["diverged"]
    assert ht.divergence([1.0, 0.5], status="diverged", reason="loss became inf")["why"] == \
        "loss became inf"
    assert ht.divergence([1.0, 0.9, 1.2, 1.5] * 10)["diverged"]          # ends above the start
    rise = [1.0] + [0.01] * 50 + [0.5] * 50                               # climbs back 50x
    assert ht.divergence(rise)["diverged"] and "climbed" in ht.divergence(rise)["why"]
    down = [1.0 / (1 + t) for t in range(200)]
    out = ht.divergence(down)
    assert not out["diverged"] and out["final_over_initial"] < 0.01
    # a rise from a tiny best that is negligible against the initial loss is not growth
    assert not ht.divergence([1.0] + [1e-8] * 50 + [3e-8] * 50)["diverged"]


def _ctx(cid):
    return Context(cid, {}, {}, BUDGETS["quick"], device="cpu", seed=0)


def test_one_layer_small_run_is_a_stand_in():
    spec = {"sizes": SMALL, "tau": 0.1, "Hs": (4, 40), "big": 40, "steps": 200, "lr": 0.05,
            "starts": 1}
    with few_threads(1):
        r = ht.too_many_heads_check(_ctx(IDS[0]), spec)
    runs = r.evidence["runs"]
    assert [(x["H"], x["start"]) for x in runs] == [(4, 0), (40, 0)]
    assert all(math.isfinite(x["final"]) and not x["diverged"] for x in runs)
    # at sizes below the paper's nothing is decided: a failure is undecided, a pass a stand-in
    assert r.status in ("error", "skipped", "pass")
    assert r.status != "pass" or r.support == "stand-in"
    assert "for the paper's K = 200" in r.evidence["many_heads_diverge"]["reason"]
    fig = r.evidence["paper_figure"]  # Fig. 4's axes: one curve per run
    assert fig["figure"] == "Fig. 4" and len(fig["panels"][0]["series"]) == 2


def test_four_layer_small_run_compares_per_step():
    spec = {"sizes": SMALL, "tau": 0.1, "Hs": (1, 2, 4), "best": 2, "slow": (4,), "steps": 40,
            "lr": 1e-2, "batch": 16, "d_model": 8, "d_ff": 16, "layers": 2, "test_prompts": 200,
            "checkpoints": 4, "wall_clock_s": 100.0}
    with few_threads(1):
        r = ht.heads_speed_check(_ctx(IDS[1]), spec)
    rows = r.evidence["rows"]
    assert [x["H"] for x in rows] == [1, 2, 4]
    assert all(sorted(map(int, x["test_loss"])) == [0, 10, 20, 30, 40] for x in rows)
    assert all(x["test_loss"]["40"] < x["test_loss"]["0"] for x in rows)  # it trains
    assert set(map(int, r.evidence["per_second_information"])) == {1, 2, 4}
    fig = r.evidence["paper_figure"]  # per step (decides) and per second (information)
    assert fig["figure"] == "Fig. 5" and [len(p["series"]) for p in fig["panels"]] == [3, 3]
    assert r.status != "pass" or r.support == "stand-in"
    assert r.status != "fail"  # a stand-in failure is undecided


# ----------------------------------------------------------------------------------------------
# The decisions at --budget paper, on synthetic curves at the paper's sizes (no training)
# ----------------------------------------------------------------------------------------------
def _paper_instance(ctx, tag, spec, H):
    from proofs_checks.yang2024.setting import make_instance
    return make_instance(ctx, tag, {**spec["sizes"], "H": H}, spec["tau"])


@pytest.mark.parametrize("big_diverges, small_diverges, verdict", [
    ((True, True), (False, False), "verified"),
    ((False, False), (False, False), "refuted"),
    ((True, False), (False, False), "inconclusive"),
    ((True, True), (True, False), "refuted"),
])
def test_one_layer_decision_at_paper_sizes(monkeypatch, big_diverges, small_diverges, verdict):
    spec = ht.ONE_LAYER
    falling = [10.0 / (1 + t) for t in range(100)]
    rising = [10.0] + [0.1] * 50 + [5.0] * 49

    def fake(ctx, sp):
        runs = []
        for H in sp["Hs"]:
            for s in range(sp["starts"]):
                div = (big_diverges if H == sp["big"] else small_diverges)[s]
                L = rising if div else falling
                runs.append({"H": H, "start": s, "status": "max_steps", **ht.divergence(L),
                             "curve": L})
        return _paper_instance(ctx, "heads-1layer", sp, sp["big"]), runs

    monkeypatch.setattr(ht, "one_layer_runs", fake)
    v = check_claim(find(IDS[0]), tiers=("train",), budget="paper", seed=0, device="cpu")
    assert v.verdict == verdict, v.as_dict()


def _marks(base: float, rate: float, steps: int, stride: int, noise):
    return {s: base * (1 + 9 * math.exp(-rate * s / steps)) + noise
            for s in range(0, steps + 1, stride)}


@pytest.mark.parametrize("rates, verdict", [
    ({1: 2, 2: 3, 4: 5, 8: 4, 16: 3, 32: 2, 64: 1.5}, "verified"),
    ({1: 6, 2: 3, 4: 5, 8: 4, 16: 3, 32: 2, 64: 1.5}, "refuted"),     # H = 1 ends lowest
    ({1: 2, 2: 3, 4: 5, 8: 4, 16: 3, 32: 6, 64: 1.5}, "refuted"),     # H = 32 faster than 4
    ({1: 2, 2: 3, 4: 5, 8: 5, 16: 3, 32: 2, 64: 1.5}, "inconclusive"),  # H = 8 ties with H = 4
])
def test_four_layer_decision_at_paper_sizes(monkeypatch, rates, verdict):
    import numpy as np

    spec = ht.FOUR_LAYER
    steps, stride = spec["steps"], spec["steps"] // spec["checkpoints"]

    def fake(ctx, sp):
        # one draw of the training, as the real runs take it: a redraw draws again
        noise = np.random.default_rng(ctx.mc_seed("heads-4layer-test")).normal(
            0, 0.01, spec["test_prompts"])
        rows = [{"H": H, "status": "max_steps", "reason": "", "steps": steps, "seconds": 50.0,
                 "seconds_per_step": 0.025 * (1 + H / 64),
                 "marks": _marks(0.1, rates[H], steps, stride, noise), "train_curve": []}
                for H in sp["Hs"]]
        return _paper_instance(ctx, "heads-4layer", sp, sp["best"]), rows, {"stride": stride}

    monkeypatch.setattr(ht, "four_layer_runs", fake)
    v = check_claim(find(IDS[1]), tiers=("train",), budget="paper", seed=0, device="cpu")
    assert v.verdict == verdict, v.as_dict()
    if verdict == "refuted":  # a training that rejects is trained again, and rejects again
        assert "redraw" in v.tiers["train"].evidence, v.tiers["train"].reason


def test_a_four_layer_rejection_that_a_second_training_undoes_is_undecided(monkeypatch):
    """The first training puts H = 8 below H = 4 and the redrawn one does not: undecided."""
    import numpy as np

    spec = ht.FOUR_LAYER
    steps, stride = spec["steps"], spec["steps"] // spec["checkpoints"]
    good = {1: 2, 2: 3, 4: 5, 8: 4, 16: 3, 32: 2, 64: 1.5}

    def fake(ctx, sp):
        first = ctx.mc_seed("heads-4layer-model") == ctx.seed_for("heads-4layer-model")
        rates = {**good, 8: 7} if first else good
        noise = np.random.default_rng(ctx.mc_seed("heads-4layer-test")).normal(
            0, 0.01, spec["test_prompts"])
        rows = [{"H": H, "status": "max_steps", "reason": "", "steps": steps, "seconds": 50.0,
                 "seconds_per_step": 0.025, "marks": _marks(0.1, rates[H], steps, stride, noise),
                 "train_curve": []} for H in sp["Hs"]]
        return _paper_instance(ctx, "heads-4layer", sp, sp["best"]), rows, {"stride": stride}

    monkeypatch.setattr(ht, "four_layer_runs", fake)
    v = check_claim(find(IDS[1]), tiers=("train",), budget="paper", seed=0, device="cpu")
    assert v.verdict == "inconclusive" and v.tiers["train"].status == "error", v.as_dict()
