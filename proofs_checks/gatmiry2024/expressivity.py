"""Proposition 3.1: the looped transformer with (5) runs preconditioned gradient descent
(expressivity: some P, Q realise the iterates), checked on the forward pass."""
from __future__ import annotations

import numpy as np
import sympy

from models.lsa import lsa_forward
from verify.claim import Claim, Context, Correction, TierResult
from verify.evidence import Finding, combine, step
from verify.formulas import NamedFormula, formula_value

from .common import _A, _D, _N, _W, _X, _XQ, _Y, PAPER, _mat
from .loss import LOSS_SETTING


# ----- Proposition 3.1 -------------------------------------------------------------------------
PROP31_FORMULAS = (
    NamedFormula("ell", "(X.T*w - y).T*(X.T*w - y)", (_N, _D, _X, _W, _Y), equation="Sec. 3.2",
                 shape=("1", "1"),
                 description="the least-squares loss l_2^2(w) = ||X^T w - y||^2 (printed with w*)"),
    NamedFormula("grad0", "X*y", (_N, _D, _X, _Y), equation="Sec. 3.4 (proof of Prop. 3.1)",
                 shape=("d", "1"), description="the paper's value of grad l_2^2(0)"),
    NamedFormula("update", "w - A*grad/n", (_N, _D, _W, _A, _mat("grad", ("d", "1"))),
                 equation="Sec. 3.4", shape=("d", "1"),
                 description="w_{t+1} = w_t - (1/n) A grad l_2^2(w_t) (step 1/n, preconditioner A)"),
    NamedFormula("w0", "ZeroMatrix(d, 1)", (_D,), equation="Sec. 3.4", shape=("d", "1"),
                 description="the start w_0 = 0"),
    NamedFormula("rows", "y.T - w.T*X", (_N, _D, _X, _W, _Y), equation="(9)", shape=("1", "n"),
                 description="[Z^(t)]_{d+1,1:n} = y^T - w_t^T X"),
    NamedFormula("query", "-w.T*x_q", (_D, _W, _XQ), equation="(9)", shape=("1", "1"),
                 description="[Z^(t)]_{d+1,n+1} = -w_t^T x_q"),
)


def _prop31_iterates(F, vals: dict, T: int) -> list:
    """w_0..w_T from the named start, update and gradient of the named loss (sympy)."""
    d = vals["X"].shape[0]
    ws = sympy.Matrix(sympy.symbols(f"w_0:{d}"))
    ell = formula_value(F["ell"], {**vals, "w": ws})
    ell = ell[0, 0] if isinstance(ell, sympy.MatrixBase) else ell
    grad = sympy.Matrix([sympy.diff(ell, wi) for wi in ws])
    w = sympy.Matrix(formula_value(F["w0"], vals)) if F["w0"] != 0 else sympy.zeros(d, 1)
    if w.shape != (d, 1):
        w = sympy.zeros(d, 1)
    out = [w]
    for _ in range(T):
        g = grad.subs(dict(zip(ws, w)))
        w = sympy.Matrix(formula_value(F["update"], {**vals, "w": w, "grad": g}))
        out.append(sympy.expand(w))
    return out


def _prop31_prompt(d: int, n: int, rng: np.random.Generator | None):
    """X, y, x_q: independent symbols, or random rationals when ``rng`` is given."""
    def entry(name):
        if rng is None:
            return sympy.Symbol(name)
        return sympy.Rational(int(rng.integers(-3, 4)), int(rng.integers(1, 3)))

    X = sympy.Matrix(d, n, lambda i, j: entry(f"x{j}_{i}"))
    y = sympy.Matrix([entry(f"y{i}") for i in range(n)])
    xq = sympy.Matrix([entry(f"xq{i}") for i in range(d)])
    return X, y, xq


def _prop31_compare(F, X, y, xq, A, T: int, scale=1) -> list:
    """[(t, model rows, model query, GD rows, GD query, top rows unchanged)] for t = 1..T, the
    transformer's Q being [[scale A, 0], [0, 0]] (eq. (5) at scale 1)."""
    d, n = X.shape
    vals = {"X": X, "y": y, "x_q": xq, "A": A, "n": n, "d": d}
    Z = sympy.zeros(d + 1, n + 1)
    Z[:d, :n], Z[:d, n], Z[d, :n] = X, xq, y.T
    M = sympy.zeros(n + 1, n + 1)
    M[:n, :n] = sympy.eye(n)
    P = sympy.zeros(d + 1, d + 1)
    P[d, d] = 1
    Q = sympy.zeros(d + 1, d + 1)
    Q[:d, :d] = scale * A
    Zs = lsa_forward(Z, [(P, Q)] * T, M, n, step=-1, keep_all=True)
    ws = _prop31_iterates(F, vals, T)
    out = []
    for t in range(1, T + 1):
        rows = sympy.Matrix(formula_value(F["rows"], {**vals, "w": ws[t]}))
        q = formula_value(F["query"], {**vals, "w": ws[t]})
        q = q[0, 0] if isinstance(q, sympy.MatrixBase) else q
        out.append((t, Zs[t][d, :n], Zs[t][d, n], rows, q, Zs[t][:d, :] == Z[:d, :]))
    return out


def _prop31_some_p_q(F, A, prompt) -> Finding:
    """The proposition itself: *some* P, Q make the looped transformer run the named
    preconditioned GD on the named loss.  With Q = [[c A, 0], [0, 0]] and P of (5), the first
    loop fixes c (the transformer is linear in c); the statement holds if that c makes three
    loops agree with three GD steps, exactly, at a random rational prompt and a symbolic A."""
    X, y, xq = prompt
    c = sympy.Symbol("c")
    (_, m_rows, m_q, rows, q, top), = _prop31_compare(F, X, y, xq, A, 1, scale=c)
    eqs = [e for e in (list(sympy.expand(m_rows - rows)) + [sympy.expand(m_q - q)]) if e != 0]
    sols = sympy.solve(eqs, c, dict=True) if eqs else [{c: sympy.Integer(1)}]
    found = [sol[c] for sol in sols if sol.get(c, 0) != 0]
    if not found:
        return Finding("some_P_Q_run_the_named_GD", False, {"equations_in_c": [str(e) for e in eqs[:3]]},
                       {"loop": 1, "why": "no scaling c of A in Q = [[c A, 0], [0, 0]] makes one loop "
                                          "of the transformer one step of the named GD"},
                       "no P, Q of the form (5) run the named preconditioned GD")
    scale = found[0]
    T = 3
    ok = all(sympy.expand(mr - r) == sympy.zeros(*r.shape) and sympy.expand(mq - qq) == 0 and tp
             for _, mr, mq, r, qq, tp in _prop31_compare(F, X, y, xq, A, T, scale=scale))
    return Finding("some_P_Q_run_the_named_GD", ok, {
        "Q": f"[[{scale} A, 0], [0, 0]]", "P": "eq. (5)", "loops_checked": T,
        "prompt": "random rational X, y, x_q; symbolic symmetric A"},
        None if ok else {"scale_from_loop_1": str(scale), "loops": T,
                         "why": "the scaling that makes loop 1 a GD step fails a later loop"},
        "" if ok else "no P, Q of the form (5) run the named preconditioned GD for three loops")


def prop31_symbolic(ctx: Context) -> TierResult:
    """Eq. (9) as a polynomial identity: fully symbolic prompts (d = 2, n = 3) for two loops, and
    for three loops with random rational prompts and a symbolic A."""
    F = ctx.formulas
    d, n = 2, 3
    a = sympy.symbols("a00 a01 a11")
    A = sympy.Matrix([[a[0], a[1]], [a[1], a[2]]])
    rng = ctx.rng("prop31-ce")
    subs_prompt = _prop31_prompt(d, n, rng)
    subs = dict(zip(list(_prop31_prompt(d, n, None)[0]) + list(_prop31_prompt(d, n, None)[1])
                    + list(_prop31_prompt(d, n, None)[2]),
                    list(subs_prompt[0]) + list(subs_prompt[1]) + list(subs_prompt[2])))
    subs.update({ai: sympy.Rational(int(rng.integers(-3, 4)), 2) for ai in a})
    findings = [_prop31_some_p_q(F, A, _prop31_prompt(d, n, ctx.rng("prop31-prompt")))]
    cases = [("symbolic prompt", _prop31_prompt(d, n, None), 2),
             ("rational prompt", _prop31_prompt(d, n, ctx.rng("prop31-prompt")), 3)]
    for label, (X, y, xq), T in cases:
        for t, m_rows, m_q, rows, q, top in _prop31_compare(F, X, y, xq, A, T):
            if label == "rational prompt" and t < T:
                continue
            ok = (sympy.expand(m_rows - rows) == sympy.zeros(1, n)
                  and sympy.expand(m_q - q) == 0 and top)
            ce = None
            if not ok:
                ce = {"loop": t, "prompt": label, "sizes": {"d": d, "n": n},
                      "instance": {str(k): str(v) for k, v in subs.items()},
                      "transformer_query": str(sympy.expand(m_q).subs(subs)),
                      "gd_query": str(sympy.expand(q).subs(subs)),
                      "transformer_rows": str(m_rows.subs(subs).tolist()),
                      "gd_rows": str(rows.subs(subs).tolist())}
            findings.append(Finding(f"loop_{t}_{label.split()[0]}", ok, {"loops": t,
                                                                         "prompt": label}, ce,
                                    "" if ok else f"after {t} loops the prompt's last row is not "
                                                  f"eq. (9) at the GD iterate with P, Q of (5)",
                                    proof_step="(5)-(9)"))
    # the value the paper gives for grad l(0), against the derivative of the named loss
    X, y, xq = _prop31_prompt(d, n, None)
    vals = {"X": X, "y": y, "x_q": xq, "n": n, "d": d}
    ws_sym = sympy.Matrix(sympy.symbols(f"w_0:{d}"))
    ell = formula_value(F["ell"], {**vals, "w": ws_sym})
    ell = ell[0, 0] if isinstance(ell, sympy.MatrixBase) else ell
    g0 = sympy.Matrix([sympy.diff(ell, wi) for wi in ws_sym]).subs({wi: 0 for wi in ws_sym})
    named = sympy.Matrix(formula_value(F["grad0"], vals))
    ok = sympy.expand(g0 - named) == sympy.zeros(d, 1)
    findings.append(Finding("gradient_at_zero", ok, {"derivative_of_ell_at_0": str(g0.T),
                                                     "named_grad0": str(named.T)},
                            None if ok else {"instance": {str(k): str(v) for k, v in subs.items()},
                                             "derivative": str(g0.subs(subs).T),
                                             "paper": str(named.subs(subs).T)},
                            "" if ok else "grad l(0) is not the printed value",
                            proof_step="Sec. 3.4, grad l(0)"))
    steps = [step("Forward pass, P and Q of eq. (5)",
                  r"[Z^{(t)}]_{d+1,:} = [Z^{(t-1)}]_{d+1,:} - \tfrac1n\, y^{(t-1)\top}X^\top A"
                  r"\begin{bmatrix}X & x_q\end{bmatrix}",
                  "lsa_forward (step -1) on sympy matrices with symbolic X, y, x_q and symmetric "
                  "A; the top d rows stay [X, x_q]."),
             step("GD iterates", r"w_{t+1} = w_t - \tfrac1n A\nabla\ell(w_t)",
                  "From the named loss (differentiated by sympy), update and start; eq. (9) is "
                  "compared entrywise: symbolic prompts for t = 1, 2, random rational prompts "
                  "(symbolic A) for t = 3.")]
    return combine(findings, steps=steps)


PROP3_1 = Claim(
    id="gatmiry2024.prop3_1",
    title="Expressivity: the looped transformer with (5) runs preconditioned gradient descent",
    paper=PAPER,
    statement=r"For appropriate choices of $P$ and $Q$, the linear looped Transformer (4) "
              r"implements multiple steps of preconditioned gradient descent "
              r"$w_{t}=w_{t-1}-\frac1n A\nabla_w\ell_2^2(w_{t-1})$, $w_0=0$, on "
              r"$\ell_2^2(w)=\|X^\top w-y\|^2$.  The proof takes "
              r"$Q=\begin{bmatrix}A&0\\0&0\end{bmatrix}$, $P=\begin{bmatrix}0&0\\0&1"
              r"\end{bmatrix}$ (eq. (5)) and states $[Z^{(t)}]_{d+1,1:n}=y^\top-w_t^\top X$, "
              r"$[Z^{(t)}]_{d+1,n+1}=-w_t^\top x_q$ (eq. (9)) with $\nabla_w\ell_2^2(0)=Xy$.",
    assumptions=("any prompt Z_0 = [[X, x_q], [y^T, 0]]", "A symmetric"),
    formulas=PROP31_FORMULAS,
    checks={"symbolic": prop31_symbolic},
    setting=LOSS_SETTING,
    correction=Correction(
        description="l(w) = ||X^T w - y||^2 / 2, so that grad l(0) = -X y and w_1 = (1/n) A X y",
        reason="grad ||X^T w - y||^2 = 2 X (X^T w - y) is -2 X y at 0, not X y; with step 1/n "
               "the forward pass is GD on half the squared loss (equivalently step 1/(2n) on "
               "l_2^2)",
        formulas={"ell": "(X.T*w - y).T*(X.T*w - y)/2", "grad0": "-X*y"}),
    notes="Sec. 3.2 prints l_2^2(w) = ||X^T w* - y||^2 (w* for w); eq. (6) omits the 1/n that "
          "eq. (7) has.",
)


