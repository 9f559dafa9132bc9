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
