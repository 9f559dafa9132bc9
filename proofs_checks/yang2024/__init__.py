"""yang2024: T. Yang, Y. Huang, Y. Liang, Y. Chi, "In-Context Learning with Representations:
Contextual Generalization of Trained Transformers" (2024).

One-layer H-head softmax attention (eqs. (5)-(8)) predicts the labels y_k = lambda^T(z_k + eps_k)
(eq. (1)) of all K dictionary tokens from the first N labelled ones; it is trained by GD on the
population loss (9), an expectation over lambda (Assumption 1) and the label noise only.  The model
is linear in the prompt labels, yhat = Ahat(theta)^T y (eq. (35)), so the expectation is a
quadratic in Ahat that the moment kernel derives exactly; every closed form of the paper (Lemma 5,
eqs. (33), (34), (36), (26), (27), Thm. 2) is compared with it.  The dynamics claims (Thm. 1,
Lemmas 6-10, Prop. 1) and the experiments (Figs. 2-5) are checked numerically and by training the
torch model of ``models.softmax``.

Sizes: K tokens in R^d, representations in R^m, prompts of N tokens, H heads, noise level tau.

Modules, one per section of claims: ``setting`` (sizes, instances, the derived loss), ``common``
(formula values, shared symbols, bound probes), ``deterministic_loss`` (Lemma 5, eqs. (33), (34),
(36)), ``attention`` (eqs. (8), (35)), ``softmax`` (Lemmas 1, 2), ``regression`` (Lemma 4, eqs.
(26), (27)), ``reparametrisation`` (Prop. 1, Lemma 6), ``gradient_bounds`` (Lemmas 7-10),
``convergence`` (Thm. 1), ``training`` (Thm. 2), ``figures`` (Figs. 2-5); the steps of the
proofs: ``gradients`` (eqs. (45), (56), (82)), ``loss_expansion`` (eqs. (75)-(77)), ``proof_steps``
(Lemma 3, eqs. (43a), (43b), (49), (62)-(64)), ``inference_steps`` (eqs. (65), (69)),
``initialisation`` (Assumption 3's remark, App. D.1); ``remarks`` (footnote 1, Secs. 3.1-3.3);
``definitions`` holds the paper's definitions of the formulas' symbols.
"""
from .deterministic_loss import EQ33, EQ34, EQ36, LEMMA5
from .attention import EQ8, EQ35
from .softmax import LEMMA1, LEMMA2
from .regression import EQ26, EQ27, LEMMA4
from .reparametrisation import LEMMA6, PROP1
from .gradient_bounds import LEMMA7, LEMMA8, LEMMA9, LEMMA10
from .convergence import THM1
from .training import THM2
from .figures import FIG2, FIG3, FIG4, FIG5
from .head_training import FIG4_DIVERGENCE, FIG5_HEADS_SPEED
from .gradients import EQ45, EQ56, EQ82
from .loss_expansion import EQ77
from .inference_steps import EQ65, EQ69
from .initialisation import PROP1_ASSUMPTION3, PROP1_PROOF
from .remarks import EQ8_ONE_HEAD, EQ17_FOOTNOTE, EQ25_REGIMES, THM1_RATE_TREND
from .proof_steps import EQ43A, EQ43B, EQ49, EQ62, EQ64, LEMMA3
from .definitions import DEFINITIONS

CLAIMS = [EQ8, EQ35, LEMMA1, LEMMA2, LEMMA4, LEMMA5, EQ33, EQ34, EQ36, EQ26, EQ27, PROP1, LEMMA6,
          LEMMA7, LEMMA8, LEMMA9, LEMMA10, THM1, THM2, FIG2, FIG3, FIG4, FIG5,
          FIG4_DIVERGENCE, FIG5_HEADS_SPEED,
          LEMMA3, EQ77, EQ45, EQ56, EQ82, EQ62, EQ43A, EQ43B, EQ49, EQ64,
          EQ65, EQ69, PROP1_ASSUMPTION3, PROP1_PROOF,
          EQ17_FOOTNOTE, THM1_RATE_TREND, EQ25_REGIMES, EQ8_ONE_HEAD]
