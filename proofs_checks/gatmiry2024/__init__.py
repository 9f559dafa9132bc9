"""gatmiry2024: K. Gatmiry, N. Saunshi, S. Reddi, S. Jegelka, S. Kumar, "Can looped transformers
learn to implement multi-step gradient descent for in-context learning?" (2024).

The looped linear transformer Z_t = Z_{t-1} - (1/n) P Z_{t-1} M (Z_{t-1}^T Q Z_{t-1}) (eqs. (2)-(4))
with the shared P = [[0, 0], [u^T, 1]], Q = [[A, 0], [0, 0]] of Sec. 3.5, on x_i ~ N(0, Sigma*),
w* ~ N(0, Sigma*^{-1}).  ``looped_icl`` derives its population loss from the forward pass; the
claims below compare the paper's closed forms, bounds and experiments with what was derived.

Notation of the formulas (each symbol bound to the paper's definition of it in
``definitions.py``): ``Sigma`` is the empirical covariance X X^T / n (the paper's Sigma),
``Sigma_star`` the population covariance Sigma*, ``Sigma_star_half`` = Sigma*^{1/2}, ``A_half`` =
A^{1/2}.  Formulas inside E_X[...] are written without the expectation: the checks take it with
the moment kernel.  Exact instances take Sigma* = R^2 and A = B^2 with rational symmetric R, B, so
that every square root in a formula is rational.

The paper defines delta twice: Sec. 3.5 delta = (8 L d / sqrt(n))^{1/(2L)} (used by Thms. 3.2-4.5
and Lemma 4.2 through delta^k), the remark after Thm. 3.2 and the proof of Lemma A.5 delta =
4 k d / sqrt(n), Lemma A.7 delta^k = 4 k d / sqrt(n).  Each claim names the reading it uses and
reports the others.
"""
from __future__ import annotations

import dataclasses
import re

from verify.claim import Claim
from verify.formulas import SIZE_NAMES, FormulaSymbol, NamedFormula

from .expressivity import PROP3_1
from .loss import COR_A4, LEMMA4_1, LEMMA_A3, LEMMA_A6, THM_A1
from .moment_bounds import LEMMA4_2, LEMMA_A2, LEMMA_A5
from .centred_bounds import LEMMA4_3, LEMMA_A7
from .optimum import THM3_2, THM_A8
from .dominance import LEMMA_A10, THM3_4, THM_A11
from .flow import THM3_3, THM_A12
from .closeness import LEMMA_A9, THM4_4
from .ood import THM4_5, THM_A13
from .ood_proof import EQ31, THM_A13_NORM_STEP
from .pairings import (EQ16, EQ19, EQ20, LEMMA_A2_GENUS_BOUND, LEMMA_A2_GENUS_SUM,
                       LEMMA_A2_PAIRING_COUNT)
from .optimum_proof import (LEMMA4_1_REMARK, LEMMA_A9_EIGENVALUE_STEP, LEMMA_A9_GRADIENT_MOMENT,
                            THM3_2_TIGHT, THM_A8_FAR_EIGENVALUE, THM_A8_LOSS_AT_INVERSE)
from .dominance_proof import EQ28, LEMMA_A10_LAMBDA1_STEP, THM_A11_EPSILON_STEP
from .flow_proof import EQ29, THM3_4_REMARK
from .layer_steps import THM_A1_LABEL_UPDATE, THM_A1_QUERY_UPDATE, THM_A1_UPDATE_RULE
from .isserlis_steps import EQ14, EQ15, EQ18, LEMMA4_2_WISHART, LEMMA_A5_GENUS_SUM
from .landscape import THM3_3_NONCONVEX
from .gaussian_steps import EQ17, LEMMA_A3_W_EXPECTATION
from .gd_prose import (EQ6, EQ7, EQ_HESSIAN, EQ_INVERSE_CONCENTRATION, EQ_ONE_STEP_SOLUTION,
                       EQ_PSEUDO_INVERSE)
from .figures import FIG1, FIG2, FIG3, FIG4
from .definitions import DEFINITIONS
from .gradient_steps import EQ21, EQ25, LEMMA_A5_GENUS_STEP, LEMMA_A9_GAMMA_STEP
from .gradient_chain import EQ27, LEMMA_A10_MAX_STEP, THM_A11_FINAL_STEP


def _own_symbols(claim: Claim) -> Claim:
    """The claim with each formula's scalar symbols narrowed to those some formula of the claim
    (as printed or corrected) uses, or that size a matrix of the formula.  The symbol tuples are shared by a section's
    claims, so Thm. 3.4 declared delta and epsilon of Lemma A.10: a swap into them made mutants no
    tier could evaluate (inconclusive survivors), and ``--set`` should reject them as symbols the
    claim does not have."""
    texts = [f.text for f in claim.formulas] + list(claim.correction.formulas.values()
                                                    if claim.correction else [])
    used = {w for t in texts for w in re.findall(r"[A-Za-z_]\w*", t)}

    def keep(f: NamedFormula, s: FormulaSymbol) -> bool:
        shapes = {x for m in f.symbols if m.kind != "scalar" for x in m.shape} | set(f.shape or ())
        return s.kind != "scalar" or s.name in used or (s.name in SIZE_NAMES and s.name in shapes)

    formulas = tuple(dataclasses.replace(f, symbols=tuple(s for s in f.symbols if keep(f, s)),
                                         _cache={}) for f in claim.formulas)
    return dataclasses.replace(claim, formulas=formulas)


CLAIMS = [_own_symbols(c) for c in (
    PROP3_1, LEMMA4_1, COR_A4, LEMMA_A3, LEMMA_A6, THM_A1, LEMMA_A2, LEMMA4_2, LEMMA_A5,
    LEMMA4_3, LEMMA_A7, THM3_2, THM_A8, THM3_4, THM_A11, LEMMA_A10, THM3_3, THM_A12,
    THM4_4, LEMMA_A9, THM4_5, THM_A13, FIG1, FIG2, FIG3, FIG4,
    # prose and proof steps of the ledger, in paper order
    EQ_PSEUDO_INVERSE, EQ_HESSIAN, EQ6, EQ7, EQ_ONE_STEP_SOLUTION, EQ_INVERSE_CONCENTRATION,
    THM3_2_TIGHT, THM3_4_REMARK, THM3_3_NONCONVEX, LEMMA4_2_WISHART,
    LEMMA4_1_REMARK, THM_A1_UPDATE_RULE, THM_A1_LABEL_UPDATE, THM_A1_QUERY_UPDATE, EQ14, EQ15,
    EQ16, EQ17, EQ18, EQ19, LEMMA_A2_GENUS_SUM,
    LEMMA_A2_GENUS_BOUND, LEMMA_A2_PAIRING_COUNT, EQ20, LEMMA_A3_W_EXPECTATION, LEMMA_A5_GENUS_SUM,
    THM_A8_LOSS_AT_INVERSE, THM_A8_FAR_EIGENVALUE, LEMMA_A9_EIGENVALUE_STEP,
    LEMMA_A9_GRADIENT_MOMENT, LEMMA_A10_LAMBDA1_STEP, THM_A11_EPSILON_STEP, EQ28, EQ29, EQ31,
    THM_A13_NORM_STEP,
    LEMMA_A5_GENUS_STEP, EQ21, EQ25, LEMMA_A9_GAMMA_STEP, EQ27, LEMMA_A10_MAX_STEP,
    THM_A11_FINAL_STEP)]
