"""Coefficient tensors of multilinear probe polynomials, exactly (or in float64).

A probe polynomial such as E[(p^T G q)(pp^T G qq)] is linear in each probe [p_x; p_y] in R^{d+1};
its coefficient of p[i] q[j] pp[l] qq[m] is the moment E[G_ij G_lm].  The polynomial's monomials are
bilinear forms between vector letters (no matrix letters occur: every covariance is the identity),
so each monomial is a sparse tensor: a form (p_x^T q_x) is delta_ij over the first d indices, a
form (p_x^T w_star) is w_star[i], a probe's scalar part p_y is index d.  ``probe_tensor`` sums these
sparse tensors; it is exact with sympy values and float64 with floats.
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

import sympy

from moments.letters import FREE_LEFT, FREE_RIGHT
from moments.poly import Poly

_PLAN_CACHE: dict = {}


def _plan(poly: Poly, slots: tuple[str, ...]):
    """Per monomial of ``poly``: (scalar-slot mask, coefficient, bilinear forms)."""
    key = (id(poly), slots)
    hit = _PLAN_CACHE.get(key)
    if hit is not None and hit[0] is poly:
        return hit[1]
    slot_syms = [sympy.Symbol(f"{s}_y") for s in slots]
    letter_slot = {f"{s}_x": k for k, s in enumerate(slots)}
    plan = []
    for (cycles, chains), coeff in poly.terms.items():
        if any(cycles):
            raise ValueError("probe polynomials have no trace words")
        forms = []
        for w in chains:
            names = [n for n, _ in w]
            if FREE_LEFT in names or FREE_RIGHT in names or len(names) != 2:
                raise ValueError(f"not a bilinear form between vectors: {w}")
            forms.append(tuple(names))
        if slot_syms:
            monomials = sympy.Poly(sympy.expand(coeff), *slot_syms).terms()
        else:
            monomials = [((), coeff)]
        for exps, c in monomials:
            if any(e > 1 for e in exps):
                raise ValueError("probe polynomial is not multilinear")
            mask = tuple(bool(e) for e in exps)
            slot_forms, fixed_forms = [], []
            for a, b in forms:
                ka, kb = letter_slot.get(a), letter_slot.get(b)
                if ka is not None and kb is not None:
                    slot_forms.append(("delta", ka, kb))
                elif ka is not None or kb is not None:
                    k = ka if ka is not None else kb
                    slot_forms.append(("vec", k, b if ka is not None else a))
                else:
                    fixed_forms.append((a, b))
            plan.append((mask, c, slot_forms, fixed_forms))
    _PLAN_CACHE[key] = (poly, plan)
    return plan


def _dot(u, v):
    return sum((a * b for a, b in zip(u, v)), 0)


def probe_tensor(poly: Poly, slots: Sequence[str], d: int, vectors: Mapping[str, Sequence],
                 scalars: Mapping[str, Any] | None = None, exact: bool = True) -> dict:
    """{(i_1, ..., i_k): coefficient} over indices in [0, d] (d is each probe's scalar part).

    ``vectors`` gives the fixed vector letters (w_star, v, e, ...) as length-d sequences,
    ``scalars`` the remaining coefficient symbols by name (C, d, beta, ...).
    """
    slots = tuple(slots)
    scalars = dict(scalars or {})
    scalars.setdefault("d", d)
    out: dict = {}
    for mask, c, slot_forms, fixed_forms in _plan(poly, slots):
        subs = {s: scalars[s.name] for s in c.free_symbols if s.name in scalars}
        value = c.subs(subs) if subs else c
        if not exact:
            value = float(value)
        for a, b in fixed_forms:
            value = value * _dot(vectors[a], vectors[b])
        if value == 0:
            continue
        partial = [((None,) * len(slots), value)]
        for k, on in enumerate(mask):
            if on:
                partial = [(_set(idx, k, d), v) for idx, v in partial]
        for form in slot_forms:
            nxt = []
            if form[0] == "delta":
                _, ka, kb = form
                for idx, v in partial:
                    for i in range(d):
                        nxt.append((_set(_set(idx, ka, i), kb, i), v))
            else:
                _, k, name = form
                vec = vectors[name]
                for idx, v in partial:
                    for i in range(d):
                        if vec[i] != 0:
                            nxt.append((_set(idx, k, i), v * vec[i]))
            partial = nxt
        for idx, v in partial:
            if None in idx:
                raise ValueError("a probe does not occur in a monomial")
            out[idx] = out.get(idx, 0) + v
    return out


def _set(idx: tuple, k: int, value: int) -> tuple:
    if idx[k] is not None:
        raise ValueError("a probe occurs twice in a monomial")
    return idx[:k] + (value,) + idx[k + 1:]
