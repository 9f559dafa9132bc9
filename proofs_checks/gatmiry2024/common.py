"""Shared by the gatmiry2024 claims: symbols, sizes, exact instances, formulas through the
moment kernel, the torch model and its trainers."""
from __future__ import annotations

from typing import Callable, Mapping

import sympy
import torch

from verify.claim import Context, TierResult
from verify.formulas import FormulaSymbol, NamedFormula

from ..kit import looped_icl as li
from ..kit.linear_icl import LinearICLSetting

PAPER = "gatmiry2024"
N, D = li.N, li.D
K_SYM = sympy.Symbol("k", positive=True, integer=True)
a_sym = li.a_sym

_N = FormulaSymbol("n")
_D = FormulaSymbol("d")
_L = FormulaSymbol("L")
_K = FormulaSymbol("k")
_I = FormulaSymbol("i")
_J = FormulaSymbol("j")
_DELTA = FormulaSymbol("delta", positive=True)
_XI = FormulaSymbol("xi", positive=True)
_EPS = FormulaSymbol("epsilon", positive=True)
_ZETA = FormulaSymbol("zeta", positive=True, unit=True)
_LAM_J = FormulaSymbol("lambda_j", positive=True, at_most="lambda_1")
_LAM_1 = FormulaSymbol("lambda_1", positive=True)
_LOSS = FormulaSymbol("loss", positive=True)


def _mat(name: str, shape=("d", "d"), symmetric: bool = False):
    """A matrix symbol; what it is lives in the paper's definitions (``definitions.py``)."""
    return FormulaSymbol(name, "matrix", shape, symmetric=symmetric)


_X = _mat("X", ("d", "n"))
_SIGMA = _mat("Sigma", symmetric=True)
_SIGMA_STAR = _mat("Sigma_star", symmetric=True)
_SIGMA_STAR_HALF = _mat("Sigma_star_half", symmetric=True)
_SIGMA_STAR_HALF_INV = _mat("Sigma_star_half_inv", symmetric=True)
_A = _mat("A", symmetric=True)
_A_HALF = _mat("A_half", symmetric=True)
_U = _mat("u", ("d", "1"))
_W = _mat("w", ("d", "1"))
_XQ = _mat("x_q", ("d", "1"))
_Y = _mat("y", ("n", "1"))

class small_torch:
    """Run torch with one CPU thread inside a check: the tensors here are tiny (d <= 10, n <= 100)
    and several threads only contend (10x slower on a loaded 2-core machine).  Restores the
    previous setting on exit; does nothing on cuda."""

    def __enter__(self):
        self.before = torch.get_num_threads()
        torch.set_num_threads(1)
        return self

    def __exit__(self, *exc):
        torch.set_num_threads(self.before)


def single_threaded(check: Callable[[Context], TierResult]) -> Callable[[Context], TierResult]:
    """A tier check run under ``small_torch``."""
    def run(ctx: Context) -> TierResult:
        with small_torch():
            return check(ctx)

    run.__name__ = check.__name__
    run.__doc__ = check.__doc__
    return run


def sec35_delta(*more: FormulaSymbol) -> NamedFormula:
    """delta := (8 L d / sqrt(n))^{1/(2L)} (Sec. 3.5), the reading of Thms. 3.2-4.5 and Lemma 4.2's
    delta^k, over n, d, L and the claim's further symbols ``more`` (k in the moment lemmas)."""
    return NamedFormula("delta", "(8*L*d/sqrt(n))**(1/(2*L))", (_N, _D, _L, *more),
                        equation="Sec. 3.5", description="delta := (8 L d / sqrt(n))^{1/(2L)}")


# the checks that take no --sigma, and what they use instead (the engine refuses the option)
OWN_SIGMA = ("its checks choose Sigma* themselves (symbolic Sigma* letters, random rational "
             "positive definite instances, or Sigma* = I where the statement is whitened)")


def _setting(quick: Mapping, default: Mapping | None = None, paper: Mapping | None = None,
             fixed_sigma: str = OWN_SIGMA):
    default = default or quick
    return LinearICLSetting(w_prior="sigma_inverse",
                            sizes={"quick": dict(quick), "default": dict(default),
                                   "paper": dict(paper or default)}, fixed_sigma=fixed_sigma)


def _size(ctx: Context, setting, name: str) -> int:
    return int({**setting.sizes[ctx.budget.name], **ctx.sizes}[name])
