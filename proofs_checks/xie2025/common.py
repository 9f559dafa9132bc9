"""Shared numeric machinery: the derived multi-head risk at concrete heads, Monte Carlo of the real
forward pass, and the one-step GD baseline risk derived from its predictor."""
from __future__ import annotations

from functools import lru_cache
from typing import Any, Sequence

import numpy as np
import sympy
import torch

from models.multihead import fast_prediction, sample_tasks
from models.padding import HeadLayout, row_sums
from moments.montecarlo import Estimate, streaming_estimate
from moments.poly import Poly

from . import derive
from moments.wick import expectation
from verify.claim import TierResult
from verify.evidence import Finding, as_stand_ins, combine, jsonable

from .setting import C_SYM, D_SYM, Instance, symbolic_prompt, w_star_letter
from .structured import value_at


# ----------------------------------------------------------------------------------------------
# The derived risk of H heads: R_0 + sum_h (R(b_h, A_h) - R_0) + sum_{h<h'} cross(h, h')
# ----------------------------------------------------------------------------------------------
def head_values(P: Any, Q: Any, d: int, tag: str = "") -> tuple[dict, dict]:
    """Letters and scalars of ``derive.head_letters`` from P = W^P W^V and Q = (W^K)^T W^Q
    ((d+1) x (d+1); numpy/torch arrays may carry leading batch axes; sympy matrices are exact)."""
    if isinstance(P, sympy.MatrixBase):
        env = {f"b_x{tag}": P[d, :d].T, f"A_xx{tag}": Q[:d, :d], f"a_xy{tag}": Q[:d, d],
               f"a_yx{tag}": Q[d, :d].T}
    else:
        env = {f"b_x{tag}": P[..., d, :d][..., None], f"A_xx{tag}": Q[..., :d, :d],
               f"a_xy{tag}": Q[..., :d, d][..., None], f"a_yx{tag}": Q[..., d, :d][..., None]}
    return env, {f"b_y{tag}": P[..., d, d] if not isinstance(P, sympy.MatrixBase) else P[d, d],
                 f"a_yy{tag}": Q[..., d, d] if not isinstance(Q, sympy.MatrixBase) else Q[d, d]}


def heads_risk(Ps: Sequence, Qs: Sequence, guess: str, fixed: dict, scalars: dict,
               exact: bool = False):
    """The derived risk of the heads (P_h, Q_h) at fixed letters (w_star, v) and scalars (C, d,
    beta); exact with sympy matrices."""
    d = int(scalars["d"])
    R1, X, R0 = derive.single_head_risk(guess), derive.cross_risk(guess), derive.base_risk(guess)
    base = R0.evaluate(dict(fixed), scalars, exact=exact)
    total = base
    vals = [head_values(P, Q, d) for P, Q in zip(Ps, Qs)]
    for env, sc in vals:
        total = total + R1.evaluate({**fixed, **env}, {**scalars, **sc}, exact=exact) - base
    for h in range(len(Ps)):
        for g in range(h + 1, len(Ps)):
            e1, s1 = head_values(Ps[h], Qs[h], d, "1")
            e2, s2 = head_values(Ps[g], Qs[g], d, "2")
            total = total + X.evaluate({**fixed, **e1, **e2}, {**scalars, **s1, **s2}, exact=exact)
    return sympy.cancel(total) if exact else total


def heads_from_bA(heads: Sequence[dict], d: int) -> tuple[list, list]:
    """(P_h, Q_h) sympy matrices whose last row of P is b_h and Q = A_h."""
    Ps, Qs = [], []
    for hd in heads:
        P = sympy.zeros(d + 1, d + 1)
        P[d, :] = hd["b"].T
        Ps.append(P)
        Qs.append(sympy.Matrix(hd["A"]))
    return Ps, Qs


@lru_cache(maxsize=None)
def compiled(guess: str) -> tuple:
    return (derive.single_head_risk(guess).compile(), derive.cross_risk(guess).compile(),
            derive.base_risk(guess))


def _spread(values: dict, n: int) -> dict:
    """Row-wise values (one per problem row: letters (S, d, 1), scalars (S,)) repeated for the
    ``n`` heads or head pairs of each row; shared values (letters (d, 1), numbers) as they are."""
    return {k: v.repeat_interleave(n, 0) if torch.is_tensor(v) and v.dim() in (1, 3) else v
            for k, v in values.items()}


def _at_rows(values: dict, rows: torch.Tensor) -> dict:
    """``_spread`` for ragged rows: row-wise values taken at ``rows`` (each head's or pair's)."""
    return {k: v[rows] if torch.is_tensor(v) and v.dim() in (1, 3) else v
            for k, v in values.items()}


def _risk(R1, X, d: int, P: torch.Tensor, Q: torch.Tensor, fixed: dict, sc: dict,
          base, layout: HeadLayout | None = None) -> torch.Tensor:
    """R_0 + sum_h (R(b_h, A_h) - R_0) + sum_{h<h'} cross(h, h') of each of S problems (S,), the
    single-head terms on the S*H heads and the cross terms on the S*H(H-1)/2 pairs in one batch
    each; ``fixed``, ``sc`` and ``base`` (R_0) shared, or row-wise (``_spread``).  With a
    ``layout`` (rows padded to H heads, ``models.padding.head_layout``) only its real heads and
    pairs are evaluated (``_risk_ragged``)."""
    if layout is not None:
        return _risk_ragged(R1, X, d, P, Q, fixed, sc, base, layout)
    S, H = P.shape[:2]
    e, s = head_values(P.reshape(S * H, d + 1, d + 1), Q.reshape(S * H, d + 1, d + 1), d)
    row_base = base[:, None] if torch.is_tensor(base) else base
    single = R1({**_spread(fixed, H), **e}, {**_spread(sc, H), **s}).reshape(S, H) - row_base
    total = base + single.sum(1)
    if H > 1:
        i, j = torch.triu_indices(H, H, 1, device=P.device)
        e1, s1 = head_values(P[:, i].reshape(-1, d + 1, d + 1), Q[:, i].reshape(-1, d + 1, d + 1),
                             d, "1")
        e2, s2 = head_values(P[:, j].reshape(-1, d + 1, d + 1), Q[:, j].reshape(-1, d + 1, d + 1),
                             d, "2")
        pairs = len(i)
        cross = X({**_spread(fixed, pairs), **e1, **e2},
                  {**_spread(sc, pairs), **s1, **s2}).reshape(S, -1)
        total = total + cross.sum(1)
    return total


def _risk_ragged(R1, X, d: int, P: torch.Tensor, Q: torch.Tensor, fixed: dict, sc: dict,
                 base, layout: HeadLayout) -> torch.Tensor:
    """``_risk`` on the real heads and pairs of ``layout`` only (at xie2025 Thm. 1's paper sweep,
    H = 1..13 padded to 13: 364 of 1,014 pairs per restart).  A padded head is zero and adds
    nothing (its single term is R_0 - R_0, its cross terms vanish), and the real terms are summed
    in the places the padded sum has them (``models.padding.row_sums``): the same risk, to the
    bit in the tests."""
    S, H = P.shape[:2]
    if (S, H) != (layout.rows, layout.top):
        raise ValueError(f"heads of shape {(S, H)} do not match the layout's "
                         f"{(layout.rows, layout.top)}")
    rows, idx = layout.heads
    e, s = head_values(P[rows, idx], Q[rows, idx], d)
    single = R1({**_at_rows(fixed, rows), **e}, {**_at_rows(sc, rows), **s})
    single = single - (base[rows] if torch.is_tensor(base) else base)
    total = base + row_sums(single, rows, idx, S, H)
    prow, i, j, slot = layout.pairs
    if len(prow):
        e1, s1 = head_values(P[prow, i], Q[prow, i], d, "1")
        e2, s2 = head_values(P[prow, j], Q[prow, j], d, "2")
        cross = X({**_at_rows(fixed, prow), **e1, **e2}, {**_at_rows(sc, prow), **s1, **s2})
        total = total + row_sums(cross, prow, slot, S, layout.slots)
    return total


class HeadsLoss:
    """The derived risk of S problems of H heads at once: P, Q of shape (S, H, d+1, d+1) -> (S,).

    A ``compiled(env, scalars)`` callable for ``models.exact.ExactLoss``: the single-head terms are
    evaluated on the S*H heads and the pairwise terms on the S*H(H-1)/2 pairs in one batch each.
    All S problems share C, beta and the fixed letters (w_star, v); ``StackedHeadsLoss`` joins
    problems that do not.
    """

    def __init__(self, guess: str, d: int, C: int, fixed: dict, beta: float = 0.0) -> None:
        self.R1, self.X, R0 = compiled(guess)
        self.guess, self.d, self.C, self.beta = guess, d, C, beta
        self.fixed = fixed
        self.base = float(R0.evaluate({k: v.cpu().numpy() for k, v in fixed.items()},
                                      {"C": C, "d": d, "beta": beta}))

    def scalars(self) -> dict:
        return {"C": float(self.C), "d": float(self.d), "beta": float(self.beta)}

    def __call__(self, env: dict, scalars: dict) -> torch.Tensor:
        return _risk(self.R1, self.X, self.d, env["P"], env["Q"], self.fixed, self.scalars(),
                     self.base)


class StackedHeadsLoss:
    """Problems of one C but other beta, w_star or v in one loss: rows [i*rows, (i+1)*rows) of P,
    Q are problems of ``parts[i]`` (a ``HeadsLoss``; one guess, d and C for all), and row r's value
    is ``parts[r // rows]``'s.  The risk is polynomial in beta and in the letters, so they enter as
    row-wise tensors of one evaluation; its coefficients are rational in C, so problems of other C
    are not stacked (as row-wise tensors C falls off the compiled polynomial's fast path, and as
    separate evaluations in one run every problem is evaluated until the last stops: for xie2025
    Thm. 2's two C, 11% more kernels than two runs).  With ``layout`` the rows are padded to its
    ``top`` heads and only their real heads and pairs are evaluated (``_risk_ragged``)."""

    def __init__(self, parts: Sequence[HeadsLoss], rows: int,
                 layout: HeadLayout | None = None) -> None:
        if not parts or len({(p.guess, p.d, p.C) for p in parts}) != 1:
            raise ValueError("stacked problems share one query guess, one d and one C")
        self.parts, self.rows, self.layout = list(parts), int(rows), layout
        self.fixed, self.sc, self.base = self._rowwise()

    def _rowwise(self) -> tuple[dict, dict, Any]:
        """The fixed letters, scalars and R_0: shared where every part has the same, else one
        per row (each part's repeated ``rows`` times)."""
        parts = self.parts
        like = next(iter(parts[0].fixed.values()))

        def per_row(values: list) -> torch.Tensor:
            values = [torch.as_tensor(v, dtype=like.dtype, device=like.device) for v in values]
            return torch.cat([v.expand(self.rows, *v.shape) for v in values])

        fixed = {}
        for k, v in parts[0].fixed.items():
            values = [p.fixed[k] for p in parts]
            fixed[k] = v if all(torch.equal(v, w) for w in values) else per_row(values)
        sc = parts[0].scalars()
        if len({p.beta for p in parts}) > 1:
            sc["beta"] = per_row([float(p.beta) for p in parts])
        bases = [p.base for p in parts]
        return fixed, sc, bases[0] if len(set(bases)) == 1 else per_row(bases)

    def __call__(self, env: dict, scalars: dict) -> torch.Tensor:
        head = self.parts[0]
        return _risk(head.R1, head.X, head.d, env["P"], env["Q"], self.fixed, self.sc, self.base,
                     self.layout)


# ----------------------------------------------------------------------------------------------
# Monte Carlo of the real forward pass
# ----------------------------------------------------------------------------------------------
def mc_heads_risk(P: np.ndarray, Q: np.ndarray, inst: Instance, samples: int, seed: int,
                  guess: tuple | None = None, C: int | None = None) -> Estimate:
    """E[(f_H-LSA(E) - y)^2] estimated on sampled prompts with the torch forward pass.

    ``guess`` = (v, beta) sets y_q = v^T x_q + beta (default y_q = 0)."""
    C = C or inst.C
    gen = torch.Generator().manual_seed(seed)
    Pt, Qt = torch.as_tensor(P, dtype=torch.float64), torch.as_tensor(Q, dtype=torch.float64)
    w_star = inst.w_star_torch()

    def draw(k):
        t = sample_tasks(w_star, C, k, gen)
        yq = _guess(t, guess)
        err = fast_prediction(t.E(yq), Pt, Qt) - t.target
        return (err ** 2).reshape(k, 1).numpy()

    mean, se = streaming_estimate(draw, samples, chunk=20_000)
    return Estimate(float(mean[0]), float(se[0]), samples)


MC_LEVEL = 0.999  # the Monte Carlo intervals' level


def mc_compare(cases: Sequence[tuple], samples: int,
               level: float = MC_LEVEL) -> tuple[bool, list[dict]]:
    """Monte Carlo of the real forward pass against the exact risk at each case (point label,
    P, Q, exact risk, instance, seed, guess), Bonferroni over the cases: (every interval holds
    its exact risk, one row a case)."""
    ok, rows, m = True, [], len(cases)
    for point, P, Q, exact, inst, seed, guess in cases:
        est = mc_heads_risk(P, Q, inst, samples, seed, guess=guess)
        ok &= est.agrees(exact, level, m)
        rows.append({"point": point, "exact": exact, "z": est.z_score(exact),
                     **est.as_dict(level, m)})
    return ok, rows


def mc_finding(name: str, ok: bool, rows: list, inst: Instance, seed: int,
               reason: str) -> Finding:
    """The finding of ``mc_compare``'s rows: the counterexample is the instance and every row
    (a test of samples drawn through ``Context.mc_seed``).  Every caller compares risks the
    engine derived (at heads it built, or at a formula's point) with the real pass, so it is a
    self-check (``Finding.self_check``): a disagreement is the engine's, never the
    statement's."""
    return Finding(name, ok, {"comparisons": rows}, None if ok else {
        "instance": inst.as_dict(), "rows": rows, "seed": seed}, "" if ok else reason,
        sampled=True, self_check=True)


def _guess(t, guess):
    if guess is None:
        return None
    v, beta = guess
    return t.xq @ torch.as_tensor(v, dtype=t.xq.dtype) + float(beta)


def float_heads(heads: Sequence[dict]) -> tuple[np.ndarray, np.ndarray]:
    """Stacked float64 (P_h, Q_h) from exact {b, A} heads."""
    d = heads[0]["A"].shape[0] - 1
    P = np.zeros((len(heads), d + 1, d + 1))
    Q = np.zeros((len(heads), d + 1, d + 1))
    for h, hd in enumerate(heads):
        P[h, d, :] = np.array(hd["b"].evalf(), dtype=float).ravel()
        Q[h] = np.array(sympy.Matrix(hd["A"]).evalf(), dtype=float)
    return P, Q


# ----------------------------------------------------------------------------------------------
# The one-step GD baseline (eq. (10), Sec. 5.2)
# ----------------------------------------------------------------------------------------------
ETA = sympy.Symbol("eta", positive=True)


def gd_risk_poly() -> Poly:
    """E[(x_q^T w_1 - y)^2] with w_1 = w* - (eta/C) X (X^T w* - y) (X the d x C data): the risk of
    the one-step GD predictor started at the prior mean (Sec. 5.2), from the moment kernel."""
    sp = symbolic_prompt("zero")
    w0 = w_star_letter()
    w1 = w0 - sp.X @ (sp.X.T @ w0 - sp.X.T @ sp.w) * (ETA / C_SYM)
    err = sp.xq.T @ w1 - sp.target
    return expectation(err * err)


@lru_cache(maxsize=None)
def gd_baseline() -> dict:
    """R_GD(eta) exactly in (C, d, s), its minimiser eta* and minimum (the paper's GD baseline
    with the best step size)."""
    R = value_at(gd_risk_poly(), {"w_star": (1, "w")}).parts.get("1", 0)
    R = sympy.factor(sympy.cancel(R))
    crit = sympy.solve(sympy.diff(R, ETA), ETA)
    eta_star = sympy.factor(crit[0]) if len(crit) == 1 else None
    R_star = sympy.factor(sympy.cancel(R.subs(ETA, eta_star))) if eta_star is not None else None
    return {"risk": R, "eta_star": eta_star, "risk_star": R_star}


def gd_risk_star(d, C) -> sympy.Expr:
    return gd_baseline()["risk_star"].subs({D_SYM: d, C_SYM: C})


def as_float(x) -> float:
    return float(sympy.N(x, 30))


def finish_at_size(inst, findings: Sequence[Finding], extra: dict | None = None,
                   steps: list | None = None) -> TierResult:
    """``finish`` for a figure's numeric or train tier: every finding at an instance smaller
    than the paper's experiments is a stand-in (it neither verifies nor refutes the figure)."""
    from .setting import paper_size_stand_in

    return finish(as_stand_ins(findings, paper_size_stand_in(inst)), extra, steps)


def finish(findings: Sequence[Finding], extra: dict | None = None,
           steps: list | None = None) -> TierResult:
    """``verify.evidence.combine`` with the extra evidence made JSON-safe (exact numbers as
    strings, sympy booleans as bools)."""
    return combine(findings, jsonable(extra or {}), steps)
