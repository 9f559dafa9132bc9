"""Polynomials in trace words and chains: the output of the moment kernel.

``Poly`` maps a canonical monomial (a sorted tuple of cycles and a sorted tuple of chains, see
``words.py``) to a sympy coefficient in the sizes ``n``, ``d`` and scalar parameters.  A scalar
``Poly`` has no free ends; a matrix-valued one (a gradient, E[W A W]) has ``<L>``/``<R>`` ends.
It can be differentiated with respect to a letter, evaluated on concrete matrices (numpy, torch,
sympy; exact or float), and printed as text or LaTeX.
"""
from __future__ import annotations

import sys
from functools import cached_property
from typing import Any, Mapping

import numpy as np
import sympy

from .letters import FREE_LEFT, FREE_RIGHT, ONE, Letter, space_size
from .words import canonical_chain, canonical_cycle, flip, is_free, word_str, word_tex


class Poly:
    """sum_k coeff_k * prod(cycles_k) * prod(chains_k), in canonical form."""

    __slots__ = ("terms", "letters", "rows", "cols", "__dict__")

    def __init__(self, terms: Mapping, letters: Mapping[str, Letter], rows: str = ONE,
                 cols: str = ONE) -> None:
        self.terms = {k: v for k, v in terms.items() if v != 0}
        self.letters = dict(letters)
        self.rows = rows
        self.cols = cols

    # ----- basic queries -----
    @property
    def is_scalar(self) -> bool:
        return self.rows == ONE and self.cols == ONE

    @cached_property
    def symmetric(self) -> frozenset:
        return frozenset(name for name, l in self.letters.items() if l.symmetric)

    def letter_names(self) -> set[str]:
        out = set()
        for cycles, chains in self.terms:
            for w in cycles + chains:
                out.update(name for name, _ in w if name not in (FREE_LEFT, FREE_RIGHT))
        return out

    def coefficient_symbols(self) -> set[sympy.Symbol]:
        out: set = set()
        for c in self.terms.values():
            out |= c.free_symbols
        return out

    def __len__(self) -> int:
        return len(self.terms)

    def __iter__(self):
        return iter(self.terms.items())

    # ----- arithmetic -----
    def _like(self, terms) -> "Poly":
        return Poly(terms, self.letters, self.rows, self.cols)

    def __add__(self, other: "Poly") -> "Poly":
        if isinstance(other, (int, sympy.Expr)) and other == 0:
            return self
        if (other.rows, other.cols) != (self.rows, self.cols):
            raise ValueError("cannot add polynomials of different shapes")
        terms = dict(self.terms)
        for k, v in other.terms.items():
            terms[k] = terms.get(k, 0) + v
        out = Poly(terms, {**self.letters, **other.letters}, self.rows, self.cols)
        return out

    __radd__ = __add__

    def __neg__(self) -> "Poly":
        return self._like({k: -v for k, v in self.terms.items()})

    def __sub__(self, other: "Poly") -> "Poly":
        return self + (-other)

    def scale(self, factor) -> "Poly":
        factor = sympy.sympify(factor)
        return self._like({k: v * factor for k, v in self.terms.items()})

    def __mul__(self, other) -> "Poly":
        if not isinstance(other, Poly):
            return self.scale(other)
        if not (self.is_scalar or other.is_scalar):
            raise ValueError("only a scalar polynomial can multiply another one")
        rows, cols = (other.rows, other.cols) if self.is_scalar else (self.rows, self.cols)
        terms: dict = {}
        for (c1, h1), v1 in self.terms.items():
            for (c2, h2), v2 in other.terms.items():
                key = (tuple(sorted(c1 + c2)), tuple(sorted(h1 + h2)))
                terms[key] = terms.get(key, 0) + v1 * v2
        return Poly(terms, {**self.letters, **other.letters}, rows, cols)

    __rmul__ = __mul__

    def map_coeffs(self, fn) -> "Poly":
        return self._like({k: fn(v) for k, v in self.terms.items()})

    def simplify(self) -> "Poly":
        """Cancel every coefficient (rational functions in the sizes and parameters)."""
        return self.map_coeffs(lambda c: sympy.factor(sympy.cancel(c)))

    def expand(self) -> "Poly":
        return self.map_coeffs(sympy.expand)

    def subs(self, values: Mapping) -> "Poly":
        """Substitute scalar symbols (sizes, parameters) in the coefficients."""
        return self.map_coeffs(lambda c: c.subs(values))

    def is_zero(self) -> bool:
        return all(sympy.cancel(c) == 0 for c in self.terms.values())

    def scale_letters(self, factors: Mapping[str, Any]) -> "Poly":
        """Replace each letter ``L`` by ``factors[L] * L`` (a scalar multiple of itself)."""
        terms: dict = {}
        for key, coeff in self.terms.items():
            cycles, chains = key
            factor = sympy.Integer(1)
            for w in cycles + chains:
                for name, _ in w:
                    if name in factors:
                        factor *= factors[name]
            terms[key] = coeff * factor
        return self._like(terms)

    def without(self, names) -> "Poly":
        """Set the letters ``names`` to zero: drop every monomial that contains one."""
        names = set(names)

        def keep(key) -> bool:
            cycles, chains = key
            return not any(name in names for w in cycles + chains for name, _ in w)

        return self._like({k: v for k, v in self.terms.items() if keep(k)})

    # ----- calculus -----
    def diff(self, name: str) -> "Poly":
        """Gradient with respect to the letter ``name`` (same shape as the letter).

        d tr(P M Q)/dM = (Q P)^T, d tr(P M^T Q)/dM = Q P, d (u^T P M Q v)/dM = (P^T u)(Q v)^T.
        For a symmetric letter the gradient is symmetrised (the gradient on symmetric matrices).
        """
        if not self.is_scalar:
            raise ValueError("only scalar polynomials can be differentiated")
        letter = self.letters.get(name)
        if letter is None:
            return Poly({}, self.letters, *_shape_of(name, self.letters))
        terms: dict = {}
        for (cycles, chains), coeff in self.terms.items():
            for i, w in enumerate(cycles):
                rest_cycles = cycles[:i] + cycles[i + 1:]
                for p, (lname, t) in enumerate(w):
                    if lname != name:
                        continue
                    rest = w[p + 1:] + w[:p]
                    body = rest if t else flip(rest, self.symmetric)
                    new = ((FREE_LEFT, False),) + body + ((FREE_RIGHT, False),)
                    _accumulate(terms, rest_cycles, chains + (new,), coeff)
            for i, w in enumerate(chains):
                rest_chains = chains[:i] + chains[i + 1:]
                for p, (lname, t) in enumerate(w):
                    if lname != name:
                        continue
                    left, right = w[:p], w[p + 1:]
                    if letter.is_vector:
                        if p == 0:
                            new = (((FREE_LEFT, False),) + right,)
                        else:
                            new = (((FREE_LEFT, False),) + flip(left, self.symmetric),)
                    elif not t:
                        new = (((FREE_LEFT, False),) + flip(left, self.symmetric),
                               flip(right, self.symmetric) + ((FREE_RIGHT, False),))
                    else:
                        new = (((FREE_LEFT, False),) + right, left + ((FREE_RIGHT, False),))
                    _accumulate(terms, cycles, rest_chains + new, coeff)
        grad = Poly(terms, self.letters, letter.rows, letter.cols)
        if letter.symmetric:
            grad = (grad + grad.transpose()).scale(sympy.Rational(1, 2))
        return grad

    def transpose(self) -> "Poly":
        """Transpose of a matrix-valued polynomial (swap the free ends)."""
        terms: dict = {}
        for (cycles, chains), coeff in self.terms.items():
            new = []
            for w in chains:
                if is_free(w):
                    new.append(_transpose_free(w, self.symmetric))
                else:
                    new.append(w)
            _accumulate(terms, cycles, tuple(new), coeff)
        return Poly(terms, self.letters, self.cols, self.rows)

    def diff_scalar(self, symbol: sympy.Symbol) -> "Poly":
        return self.map_coeffs(lambda c: sympy.diff(c, symbol))

    # ----- evaluation -----
    @cached_property
    def _symbols(self) -> tuple:
        return tuple(sorted(self.coefficient_symbols(), key=lambda s: s.name))

    @cached_property
    def _lambdas(self):
        args = self._symbols
        return {k: sympy.lambdify(args, v, modules="math") for k, v in self.terms.items()}

    def evaluate(self, env: Mapping[str, Any], scalars: Mapping | None = None,
                 exact: bool = False) -> Any:
        """Value on concrete letters ``env`` (numpy, torch or sympy matrices; vectors as columns).

        ``scalars`` maps symbols or their names (``n``, ``d``, parameters) to values.  With
        ``exact=True`` coefficients are substituted symbolically (sympy matrices, rationals, or a
        symbolic ``n``); otherwise they are compiled once to float functions.
        """
        scalars = {(k.name if isinstance(k, sympy.Symbol) else k): v
                   for k, v in (scalars or {}).items()}
        cache: dict = {}
        total = None  # not 0: sympy refuses 0 + Matrix
        for key, coeff in self.terms.items():
            cycles, chains = key
            if exact:
                c = coeff.subs({s: scalars[s.name] for s in coeff.free_symbols if s.name in scalars})
            else:
                missing = [s.name for s in self._symbols if s.name not in scalars]
                if missing:
                    raise KeyError(f"no value for {', '.join(missing)}")
                c = self._lambdas[key](*[scalars[s.name] for s in self._symbols])
            value = c
            for w in cycles:
                value = value * _word_value(w, env, cache, True, self.letters, scalars)
            opened = []
            for w in chains:
                if is_free(w):
                    opened.append(w)
                else:
                    value = value * _word_value(w, env, cache, False, self.letters, scalars)
            if opened:
                value = value * _open_value(opened, env, cache, self.letters, scalars,
                                            lambda: self._identity(env, scalars, exact))
            total = value if total is None else total + value
        if total is None:
            if not self.is_scalar:
                raise ValueError("the polynomial is zero; its matrix shape is unknown here")
            return 0
        return total

    def _identity(self, env: Mapping[str, Any], scalars: Mapping, exact: bool) -> Any:
        """The identity a term like n tr(M) I carries, sized by the polynomial's row size (from
        ``scalars``), of the kind the letters are (sympy when exact or given as sympy)."""
        size = scalars.get(self.rows) if isinstance(self.rows, str) else self.rows
        if not isinstance(size, (int, sympy.Integer)) or self.rows != self.cols:
            raise ValueError(f"identity-valued term: give the size {self.rows} as a scalar")
        kinds = [type(v) for v in env.values()]
        if exact or any(issubclass(k, sympy.MatrixBase) for k in kinds):
            return sympy.eye(int(size))
        torch_like = next((v for v in env.values() if hasattr(v, "new_zeros")), None)
        if torch_like is not None:  # a torch tensor's dtype and device, without importing torch
            eye = torch_like.new_zeros((int(size), int(size)))
            eye.diagonal().fill_(1)
            return eye
        return np.eye(int(size))

    def compile(self) -> "CompiledPoly":
        """An evaluator for repeated calls (training): coefficients lambdified into one function,
        every distinct word multiplied once per call, common word prefixes shared."""
        return CompiledPoly(self)

    # ----- printing -----
    def monomial_str(self, key) -> str:
        cycles, chains = key
        parts = [word_str(w, True) for w in cycles]
        parts += ["(" + word_str(w, False) + ")" if not is_free(w) else word_str(w, False)
                  for w in chains]
        return " * ".join(parts) if parts else "1"

    def __str__(self) -> str:
        if not self.terms:
            return "0"
        items = sorted(self.terms.items(), key=lambda kv: self.monomial_str(kv[0]))
        return " + ".join(f"({sympy.sstr(v)})*{self.monomial_str(k)}" for k, v in items)

    def __repr__(self) -> str:
        return f"Poly({len(self.terms)} terms, {self.rows}x{self.cols})"

    def monomial_tex(self, key) -> str:
        cycles, chains = key
        parts = [word_tex(w, self.letters, True) for w in cycles]
        for w in chains:
            tex = word_tex(w, self.letters, False)
            parts.append(tex if is_free(w) else f"\\left({tex}\\right)")
        return " ".join(parts) if parts else "1"

    def latex(self) -> str:
        if not self.terms:
            return "0"
        items = sorted(self.terms.items(), key=lambda kv: self.monomial_str(kv[0]))
        out = []
        for k, v in items:
            c = sympy.factor(v)
            mono = self.monomial_tex(k)
            ctex = sympy.latex(c)
            if mono == "1":
                out.append(ctex)
            elif c == 1:
                out.append(mono)
            elif c == -1:
                out.append("-" + mono)
            else:
                if isinstance(c, sympy.Add):
                    ctex = f"\\left({ctex}\\right)"
                out.append(f"{ctex}\\, {mono}")
        return " + ".join(out).replace("+ -", "- ")


def _accumulate(terms: dict, cycles, chains, coeff) -> None:
    key = (tuple(sorted(cycles)), tuple(sorted(chains)))
    terms[key] = terms.get(key, 0) + coeff


def _transpose_free(w, symmetric) -> tuple:
    starts_free = w[0][0] == FREE_LEFT
    ends_free = w[-1][0] == FREE_RIGHT
    inner = w[1 if starts_free else 0: len(w) - 1 if ends_free else len(w)]
    body = flip(inner, symmetric)
    head = ((FREE_LEFT, False),) if ends_free else ()
    tail = ((FREE_RIGHT, False),) if starts_free else ()
    return head + body + tail


def _shape_of(name: str, letters: Mapping[str, Letter]) -> tuple[str, str]:
    letter = letters.get(name)
    return (letter.rows, letter.cols) if letter else (ONE, ONE)


def _array(env, name: str):
    """A letter's value; vectors may be given flat.  A leading batch axis (numpy, torch) is kept:
    letters of shape (B, r, c) evaluate B instances at once (e.g. one per training seed)."""
    value = env[name]
    shape = getattr(value, "shape", None)
    if shape is not None and len(shape) == 1:
        value = value.reshape(-1, 1)
    return value


def _t(a):
    """Transpose of the last two axes (numpy/torch ``.mT``; sympy ``.T``)."""
    return a.mT if hasattr(a, "mT") else a.T


def _product(word, env, letters, scalars):
    value = None
    for name, t in word:
        if name in (FREE_LEFT, FREE_RIGHT):
            continue
        a = _array(env, name)
        if t:
            a = _t(a)
        value = a if value is None else value @ a
    return value


def _word_value(word, env, cache, cycle: bool, letters, scalars):
    key = (cycle, word)
    if key in cache:
        return cache[key]
    m = _product(word, env, letters, scalars)
    if hasattr(m, "ndim"):  # numpy / torch, possibly batched
        value = m.diagonal(0, -2, -1).sum(-1) if cycle else m[..., 0, 0]
    else:
        value = m.trace() if cycle else m[0, 0]
    cache[key] = value
    return value


def _open_value(opened, env, cache, letters, scalars, identity=None):
    left = [w for w in opened if w[0][0] == FREE_LEFT]
    right = [w for w in opened if w[-1][0] == FREE_RIGHT]
    if len(left) == 1 and left == right:
        w = left[0]
        m = _product(w, env, letters, scalars)
        if m is None:
            if identity is None:
                raise ValueError("identity-valued term: evaluate with explicit sizes instead")
            return identity()
        return m
    col = _product(left[0], env, letters, scalars) if left else None
    row = _product(right[0], env, letters, scalars) if right else None
    if col is not None and row is not None:
        return col @ row
    return col if col is not None else row


def canonical_key(cycles, chains, symmetric: frozenset) -> tuple:
    """Canonical monomial key for raw cycles and chains."""
    return (tuple(sorted(canonical_cycle(w, symmetric) for w in cycles)),
            tuple(sorted(canonical_chain(w, symmetric) for w in chains)))


def size_symbol(space: str) -> sympy.Symbol:
    return space_size(space)


class CompiledPoly:
    """``Poly.evaluate`` for hot loops: the same value, computed with a fixed plan.

    Works on numpy or torch letters (with an optional leading batch axis) and float scalars.
    """

    def __init__(self, poly: Poly) -> None:
        if not poly.is_scalar:
            raise ValueError("only scalar polynomials can be compiled")
        self.poly = poly
        self.symbols = poly._symbols
        self.names = [s.name for s in self.symbols]
        keys = list(poly.terms)
        self._coeff_exprs = [poly.terms[k] for k in keys]
        self._coeffs = sympy.lambdify(self.symbols, self._coeff_exprs, modules="math")
        words: dict = {}
        self.monomials = []
        for cycles, chains in keys:
            idx = []
            for w in cycles:
                idx.append(words.setdefault((True, w), len(words)))
            for w in chains:
                idx.append(words.setdefault((False, w), len(words)))
            self.monomials.append(tuple(idx))
        self.words = list(words)
        self._on_device: dict = {}
        self._plans: dict = {}

    def __call__(self, env: Mapping[str, Any], scalars: Mapping[str, Any] | None = None) -> Any:
        scalars = scalars or {}
        missing = [n for n in self.names if n not in scalars]
        if missing:
            raise KeyError(f"no value for {', '.join(missing)}")
        given = [scalars[n] for n in self.names]
        values = self._word_values(env)
        plan = self._tensor_scalar_plan(given, values)
        if plan is not None:
            key, positions, monomials, coeffs = plan
            return self._sum_torch(coeffs, values + [given[i] for i in positions], monomials, key)
        coeffs = self._coeffs(*given)
        if _torch_batch(values, coeffs):
            return self._sum_torch(coeffs, values, self.monomials, "words")
        total = 0
        for c, idx in zip(coeffs, self.monomials):
            term = c
            for i in idx:
                term = term * values[i]
            total = total + term
        return total

    def _word_values(self, env: Mapping[str, Any]) -> list:
        """The value of every word: the trace of a cycle's product, the entry of a chain's.
        On torch, a 1x1 product is read by ``reshape`` (a view both ways, where m[..., 0, 0]'s
        backward is a kernel) and the traces of the cycles' products of one shape are taken
        together, one stack and one diagonal sum (and one kernel back) for all of them."""
        prefix: dict = {}
        values: list = [None] * len(self.words)
        traces: dict = {}
        for k, (cycle, word) in enumerate(self.words):
            m = _prefix_product(word, env, prefix)
            if not hasattr(m, "ndim"):
                values[k] = m.trace() if cycle else m[0, 0]
            elif _is_tensor(m) and m.shape[-2:] == (1, 1):
                values[k] = m.reshape(m.shape[:-2])
            elif _is_tensor(m) and cycle:
                traces.setdefault((m.shape, m.dtype, m.device), []).append((k, m))
            else:
                values[k] = m.diagonal(0, -2, -1).sum(-1) if cycle else m[..., 0, 0]
        if traces:
            import torch

            for group in traces.values():
                sums = torch.stack([m for _, m in group]).diagonal(0, -2, -1).sum(-1)
                for (k, _), t in zip(group, sums.unbind(0)):
                    values[k] = t
        return values

    def _tensor_scalar_plan(self, given: list, values: list) -> tuple | None:
        """Where scalar symbols are bound to tensors (a per-head scalar, say), their coefficients
        c_k(t) = sum_j a_kj t^(e_j) are expanded into the monomials, the t's read as further
        word values: sum_k c_k(t) W_k = sum_kj a_kj t^(e_j) W_k, with numbers a_kj derived
        exactly (sympy, at the numeric scalars' values).  The sum then runs as a gather, a
        product and a dot, instead of the coefficients' own arithmetic, one operation per
        multiply (and as many in the backward pass).  None where no scalar is a tensor, the
        values are not one batch of torch tensors, or a coefficient is not a polynomial in the
        tensor scalars."""
        positions = tuple(i for i, v in enumerate(given) if _is_tensor(v))
        if not positions or not _torch_batch(values + [given[i] for i in positions], []):
            return None
        numbers = tuple(None if i in positions else float(v) for i, v in enumerate(given))
        key = (positions, numbers)
        if key not in self._plans:
            self._plans[key] = self._expand_scalars(positions, numbers)
        plan = self._plans[key]
        return None if plan is None else (key, positions, *plan)

    def _expand_scalars(self, positions: tuple, numbers: tuple) -> tuple | None:
        at = {s: sympy.Rational(v) for s, v in zip(self.symbols, numbers) if v is not None}
        tensor_symbols = [self.symbols[i] for i in positions]
        first = len(self.words)  # the tensor scalars follow the word values
        monomials, coeffs = [], []
        for expr, idx in zip(self._coeff_exprs, self.monomials):
            try:
                p = sympy.Poly(sympy.expand(sympy.sympify(expr).subs(at)), *tensor_symbols)
            except sympy.PolynomialError:
                return None
            for powers, a in p.terms():
                if not a.is_number:
                    return None
                if a != 0:
                    monomials.append((*idx, *[first + j for j, e in enumerate(powers)
                                                for _ in range(e)]))
                    coeffs.append(float(a))
        return (monomials, coeffs) if monomials else None

    def _sum_torch(self, coeffs, values, monomials, label) -> Any:
        """sum_k c_k prod_{i in k} v_i in a few tensor operations (a gather, a product, a dot)
        rather than one multiply and one add per factor: on a GPU each operation is a kernel
        launch, and a loss of some 500 monomials became thousands of launches per evaluation.
        Coefficients that are tensors (of scalar symbols bound to tensors) are stacked."""
        import torch

        values = torch.broadcast_tensors(*values)
        V = torch.stack([*values, torch.ones_like(values[0])])  # the last row pads a monomial
        key = (label, V.device, V.dtype, tuple(None if isinstance(c, torch.Tensor) else float(c)
                                               for c in coeffs))
        if key not in self._on_device:  # built once per device and numeric coefficients
            width = max(len(m) for m in monomials)
            numeric = [k for k, c in enumerate(key[3]) if c is not None]
            other = [k for k, c in enumerate(key[3]) if c is None]
            self._on_device[key] = (
                torch.tensor([[*m, *[len(values)] * (width - len(m))] for m in monomials],
                             device=V.device),
                torch.tensor(numeric, dtype=torch.long, device=V.device),
                torch.tensor([key[3][k] for k in numeric], dtype=V.dtype, device=V.device),
                other, torch.tensor(other, dtype=torch.long, device=V.device))
        idx, numeric, c, other, other_rows = self._on_device[key]
        terms = V[idx].prod(1)
        total = torch.tensordot(c, terms if not other else terms[numeric], dims=1)
        if other:
            rest = torch.stack(torch.broadcast_tensors(*[coeffs[k] for k in other]))
            total = total + (rest * terms[other_rows]).sum(0)
        return total


def _is_tensor(x: Any) -> bool:
    torch = sys.modules.get("torch")
    return torch is not None and isinstance(x, torch.Tensor)


def _torch_batch(values: list, coeffs: list) -> bool:
    """Whether the monomial sum can run as one batch: torch word values and coefficients that
    are numbers or tensors (floating, one device, one dtype)."""
    import numbers

    if not values:
        return False
    import torch

    tensors = [c for c in coeffs if isinstance(c, torch.Tensor)]
    if not all(isinstance(c, numbers.Real) or isinstance(c, torch.Tensor) for c in coeffs):
        return False
    return all(isinstance(v, torch.Tensor) and v.is_floating_point() for v in values) and \
        len({v.device for v in values + tensors}) == 1 and \
        len({v.dtype for v in values + tensors}) == 1


def _prefix_product(word, env, cache):
    """Product of the letters of ``word``, reusing the longest cached prefix."""
    k = len(word)
    while k > 0 and word[:k] not in cache:
        k -= 1
    value = cache[word[:k]] if k else None
    for j in range(k, len(word)):
        name, t = word[j]
        a = _array(env, name)
        if t:
            a = _t(a)
        value = a if value is None else value @ a
        cache[word[:j + 1]] = value
    return value
