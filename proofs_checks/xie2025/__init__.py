"""xie2025: S. Xie, R. Yuan, S. Rossi, T. Hannagan, "The Initialization Determines Whether In-Context
Learning Is Gradient Descent".

Multi-head linear self-attention (eqs. (5)-(6)) and y_q-LSA (eqs. (11)-(12)) on in-context linear
regression with a non-zero prior mean w ~ N(w*, I).
"""
from .gd_claims import EQ8, EQ9, LEMMA3

CLAIMS = [EQ8, EQ9, LEMMA3]
