"""The claim kit: the settings the papers share and the generic checks their claims are built
from, with the engine's soundness rules inside (formulas read through the context, non-finite
or underflowed comparisons undecided).

Settings:
- ``linear_icl``: linear ICL prompts, x ~ N(0, Sigma), a prior on w, sizes per budget, exact
  (rational) and float instances, symbolic prompts for the moment kernel (ahn2023, gatmiry2024);
- ``looped_icl``: the looped linear transformer's forward pass and its population loss derived
  by the moment kernel, Wishart moments in n and d (gatmiry2024).
Generic checks and pieces (each module's docstring states its check; ``tests/proofs_checks/
test_kit_*.py`` declares a toy claim outside any paper for each):
- ``forward_identity``: the model at the stated weights outputs the stated expression
  (symbolic at small sizes, float64 Monte Carlo at the budget's), and ``identity_truth``,
  which judges a surviving mutant of such a claim by the exact identity (``Claim(exact=...)``);
- ``layer_optimum`` (+ ``layer_optimum_float``): the global optimum of one linear-attention
  layer and the risk there (ahn2023 Thm. 1's family);
- ``stationary`` (+ ``stationary_float``): a set W = x_W D_W(Sigma) essentially contains
  critical points of the derived loss (ahn2023 Thms. 4, 5), ``stationary_truth`` for mutants;
- ``scalar_optimum``: the scalar optimum a* I of a looped model, bounds at it, the Hessian
  there, training to it (gatmiry2024 Thms. 3.2, A.8), ``optimum_values`` for mutants;
- ``looped_loss``: a closed-form population loss of the looped model equals the loss derived
  from the forward pass (gatmiry2024 Cor. A.4, Lemmas A.3, 4.1);
- ``bound``: a bound under a hypothesis, "if H then Q >= B" with Q derived, searched exactly
  along families of points (walked, or bisected for the smallest failing size), with the first
  violation and the closest approach (gatmiry2024 Thms. 3.3, 3.4, 4.4, A.11, A.12, Lemmas
  A.9, A.10, eq. (28) and the proof steps at lines 702 and 725);
- ``ratio_probe``: a printed bound against the bound its proof gives, a ratio probed over
  positive values inside the hypotheses, exact where constant (yang2024's proof chains);
- ``exact_compare``: named formulas compared at exact points, fast where the sides are far
  apart and exact where they are close; sides that are not real numbers bound nothing;
- ``positivity``: a sufficient certificate that a proof's bound is >= another on the positive
  orthant (polynomials, integer symbols >= 1, ``Max`` branch by branch), which turns a probe's
  pass into a proof;
- ``pointwise``: a step or identity at exact rational and float64 points, ``pointwise_truth``;
- ``size_identity``: an identity in a symbolic size, proved by the moment kernel or exact at
  concrete sizes;
- ``trend``: monotone / flat / linear-growth findings over a size for figure claims, exact
  where the values are, z-tested where they are estimates;
- ``figures``: a paper figure re-drawn from the check's numbers;
- ``matrices``: shapes and exact evaluation of matrix formulas;
- ``Arrays`` (``Exact``, ``Floats``): one forward pass written once for sympy and torch;
- ``torch_value``: a formula's value in float64 torch, differentiable;
- ``rounding``: float64 rounding allowances of derived polynomials.

Dependencies point one way: ``moments``, ``models``, ``verify``'s data model <- kit <- paper
packages; the kit imports no paper.
"""
from .arrays import Arrays, Exact, Floats
from .evaluate import torch_value
from .forward_identity import ForwardIdentity, forward_identity, identity_truth

__all__ = ["Arrays", "Exact", "Floats", "ForwardIdentity", "forward_identity", "identity_truth",
           "torch_value"]
