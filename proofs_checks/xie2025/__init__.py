"""xie2025: S. Xie, R. Yuan, S. Rossi, T. Hannagan, "The Initialization Determines Whether In-Context
Learning Is Gradient Descent" (2025).

Multi-head linear self-attention (eqs. (5)-(6)) and y_q-LSA (eqs. (11)-(12)) on in-context linear
regression with a non-zero prior mean: tasks w_hat ~ N(w*, I).
"""
from .definitions import DEFINITIONS  # noqa: F401 - the registry reads it
from .gd_claims import EQ8, EQ9, LEMMA3
from .head_claims import FIG2, THM1
from .convexity_claims import LEMMA1, LEMMA2
from .gap_claims import FIG3, FIG4, FIG5
from .stationary_claims import THM2, THM4
from .block_identities import B1, CONCAT
from .head_counting import COUNTS
from .limit_gradient import LIMIT
from .risk_components import SPLIT
from .saddle_points import SADDLE
from .b3_risk import B3_RISK
from .b3_moments import B3_MOMENTS
from .b3_case_sum import B3_CASE_SUM
from .b3_cross_case import B3_CROSS_CASE

CLAIMS = [THM1, THM2, LEMMA1, EQ8, EQ9, THM4, LEMMA2, LEMMA3, FIG2, FIG3, FIG4, FIG5,
          # the proofs' intermediate steps and the prose, in paper order
          CONCAT, SADDLE, COUNTS, SPLIT, LIMIT, B1, B3_RISK, B3_MOMENTS,
          B3_CROSS_CASE, B3_CASE_SUM]
