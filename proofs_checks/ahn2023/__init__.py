"""ahn2023: K. Ahn, X. Cheng, H. Daneshmand, S. Sra, "Transformers learn to implement
preconditioned gradient descent for in-context learning" (2023).

one_layer: Theorem 1 (the single layer); gd_layers: Lemma 2 (the sparse forward pass as GD).
sparse: the derived losses of the k-layer models (9) and (13), shared by the claims below.
multilayer: Theorems 3, 4 and 5.  appendix: Lemmas 6-10 and the reduction of App. A.1.
figures, figures_sec61: the experiments of Secs. 5.3 and 6.1 (Figures 1-4).

Index convention: the paper calls the model with A_0..A_k a "k-layer transformer"; it has k+1
attention layers.  Here ``layers`` always counts attention layers (the experiments' "three-layer
transformer" with A_0, A_1, A_2 has layers = 3).
"""
from .definitions import DEFINITIONS  # noqa: F401 - the registry reads it
from .gd_layers import LEMMA2
from .one_layer import PAPER, THM1

CLAIMS = [THM1, LEMMA2]
from .multilayer import THM3, THM4, THM5  # noqa: E402

CLAIMS += [THM3, THM4, THM5]
from .figures import FIG1, FIG2  # noqa: E402
from .figures_sec61 import FIG3, FIG4  # noqa: E402

CLAIMS += [FIG1, FIG2, FIG3, FIG4]
from .appendix import LEMMA7, LEMMA8, LEMMA9  # noqa: E402

CLAIMS += [LEMMA7, LEMMA8, LEMMA9]
from .single_layer_proof import CLAIMS as _PROOF_OF_THM1  # noqa: E402

CLAIMS += _PROOF_OF_THM1
from .remarks import CLAIMS as _REMARKS  # noqa: E402

CLAIMS += _REMARKS
from .remarks_multilayer import CLAIMS as _REMARKS_MULTILAYER  # noqa: E402

CLAIMS += _REMARKS_MULTILAYER
# App. B and C, the displayed steps of the proofs (multilayer_proof: (22), App. B.1, B.4;
# thm4_proof: App. B.2; thm5_proof: App. B.3; auxiliary: App. C; helpers in proof_points and
# proof_moments)
from .multilayer_proof import B1 as EQ_B1_LOSS, B4 as EQ_B4_LOSS, EQ22  # noqa: E402
from .thm4_proof import EQ25, EQ26, EQ27, EQ28, EQ29, EQ30, EQ_B2_STEP1  # noqa: E402
from .thm5_proof import (EQ31, EQ34, EQ35, EQ36, EQ37, EQ40, EQ41, EQ42, EQ49,  # noqa: E402
                         EQ_B3_STEP1, EQ_B3_STEP4)
from .auxiliary import EQ54, EQ56, EQ60, EQ61  # noqa: E402

CLAIMS += [EQ_B1_LOSS, EQ22, EQ_B2_STEP1, EQ25, EQ26, EQ27, EQ28, EQ29, EQ30, EQ31, EQ_B3_STEP1,
           EQ34, EQ35, EQ36, EQ37, EQ40, EQ41, EQ42, EQ49, EQ_B3_STEP4, EQ_B4_LOSS,
           EQ54, EQ56, EQ60, EQ61]
from .conditioning import CLAIMS as _CONDITIONING  # noqa: E402

CLAIMS += _CONDITIONING
