"""verify.runner: tiers run on one CPU thread below the paper budget, and threads are restored."""
import torch

from verify.claim import Claim, TierResult
from verify.runner import check_claim


def _recording_claim(seen: list) -> Claim:
    def numeric(ctx):
        seen.append(torch.get_num_threads())
        return TierResult("pass")

    return Claim(id="demo2026.thm1", title="t", paper="demo2026", statement="s", assumptions=(),
                 formulas=(), checks={"numeric": numeric})


def test_checks_run_on_one_cpu_thread_and_threads_are_restored():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        seen: list = []
        check_claim(_recording_claim(seen), tiers=("numeric",), budget="quick", device="cpu")
        assert seen == [1]
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)


def test_paper_budget_keeps_every_thread():
    before = torch.get_num_threads()
    torch.set_num_threads(2)
    try:
        seen: list = []
        check_claim(_recording_claim(seen), tiers=("numeric",), budget="paper", device="cpu")
        assert seen == [2]
    finally:
        torch.set_num_threads(before)


# ----------------------------------------------------------- what a tier reads decides support
def _demo_claim(checks):
    from verify.claim import Claim
    from verify.formulas import FormulaSymbol, NamedFormula

    x = FormulaSymbol("x", positive=True)
    return Claim("demo2026.lemma1", "b = 2x", "demo2026", "b = 2x", (),
                 (NamedFormula("b", "2*x", (x,)), NamedFormula("c", "x", (x,))), checks)


def test_a_tier_that_does_not_read_a_set_formula_cannot_support_it():
    from verify.claim import TierResult
    from verify.runner import check_claim

    def reads_b(ctx):
        ctx.formulas["b"]
        return TierResult("pass")

    def reads_c(ctx):
        ctx.formulas.get("c")
        return TierResult("pass")

    claim = _demo_claim({"symbolic": reads_b, "numeric": reads_c})
    v = check_claim(claim, tiers=("symbolic", "numeric"), overrides={"b": "3*x"})
    assert v.tiers["symbolic"].status == "pass" and v.tiers["symbolic"].reads == ("b",)
    assert v.tiers["numeric"].status == "skipped" and "does not read b" in v.tiers["numeric"].reason
    assert v.verdict == "verified"
    only = check_claim(claim, tiers=("numeric",), overrides={"b": "3*x"})
    assert only.verdict == "inconclusive" and "does not read b" in only.reason
    # as printed, the claim's own statement: a tier that reads no formula still counts
    assert check_claim(claim, tiers=("numeric",)).verdict == "verified"
    assert v.as_dict()["tiers"]["numeric"]["reads"] == ["c"]


def test_a_search_alone_cannot_verify_a_set_formula_but_its_failure_refutes():
    from verify.claim import TierResult
    from verify.evidence import Finding, combine
    from verify.runner import check_claim

    def search(ctx):
        bad = ctx.formulas["b"] == 0
        return combine([Finding("adam", not bad, counterexample={"b": 0} if bad else None,
                                search=True)])

    claim = _demo_claim({"numeric": search})
    v = check_claim(claim, tiers=("numeric",), overrides={"b": "3*x"})
    assert v.verdict == "inconclusive" and "neither exhaustive nor certified" in v.reason
    assert v.tiers["numeric"].support == "search"
    assert check_claim(claim, tiers=("numeric",), overrides={"b": "0"}).verdict == "refuted"


def test_a_proof_step_that_held_only_at_probe_points_does_not_certify_a_set_formula():
    """With a formula set, a search's pass is no verdict unless a proof the tiers rebuilt
    certifies the statement; a proof step that held only because a probe found no
    counterexample (``search=True``) is no such proof, an exact one is."""
    from verify.evidence import Finding, combine
    from verify.runner import check_claim

    def tiers(proof_is_a_search):
        def symbolic(ctx):
            ctx.formulas["b"]
            return combine([Finding("chain", True, proof_step="(1)", search=proof_is_a_search)])

        def numeric(ctx):
            ctx.formulas["b"]
            return combine([Finding("adam", True, search=True)])
        return {"symbolic": symbolic, "numeric": numeric}

    probe = check_claim(_demo_claim(tiers(True)), tiers=("symbolic", "numeric"),
                        overrides={"b": "3*x"})
    assert probe.verdict == "inconclusive", probe.reason
    assert probe.proof["status"] == "supported" and probe.proof["findings"][0]["search"] is True
    exact = check_claim(_demo_claim(tiers(False)), tiers=("symbolic", "numeric"),
                        overrides={"b": "3*x"})
    assert exact.verdict == "verified" and "search" not in exact.proof["findings"][0]


def test_a_timeout_stops_the_claim_and_keeps_the_finished_tiers(tmp_path):
    import time

    from verify.claim import TierResult
    from verify.runner import check_claim

    ran_out = tmp_path / "the slow tier ran to its end"

    def quick(ctx):
        ctx.formulas["b"]
        return TierResult("pass")

    def slow(ctx):
        time.sleep(30)
        ran_out.touch()
        return TierResult("pass")

    claim = _demo_claim({"symbolic": quick, "numeric": slow, "train": quick})
    v = check_claim(claim, timeout=0.3)
    assert not ran_out.exists()  # stopped, not waited for
    assert v.verdict == "inconclusive" and v.reason.startswith("timed out after 0.3 s")
    assert v.tiers["symbolic"].status == "pass"
    assert v.tiers["numeric"].status == "error" and "timed out" in v.tiers["numeric"].reason
    assert v.tiers["train"].status == "skipped"


# ----------------------------------------------------- a tier's warnings are its own, in any order
def _warning_claim() -> Claim:
    def numeric(ctx):
        x = torch.ones(2, dtype=torch.float64, requires_grad=True)
        float(x.sum())  # torch warns once per process (TORCH_WARN_ONCE) by default
        torch.func.jvp(torch.sin, (x.detach(),), (torch.ones(2, dtype=torch.float64),))
        return TierResult("pass")

    return Claim(id="demo2026.thm2", title="t", paper="demo2026", statement="s", assumptions=(),
                 formulas=(), checks={"numeric": numeric})


def test_a_tier_reports_the_same_warnings_whatever_ran_before_it_in_its_process():
    """A tier that reads a requires_grad tensor as a number gets torch's warning every time it
    runs, not only the first time in its process, and a forward-mode derivative does not bring
    the warnings of torch's lazily imported modules with it: with --jobs N, which claims a worker
    ran first must not change the JSON."""
    claim = _warning_claim()
    runs = [check_claim(claim, tiers=("numeric",), budget="quick", device="cpu")
            .tiers["numeric"].evidence.get("warnings") for _ in range(2)]
    assert runs[0] == runs[1]
    assert any("requires_grad=True to a scalar" in w for w in runs[0])
    assert not any("jit" in w for w in runs[0])
    assert not torch.is_warn_always_enabled()  # restored
