"""Memoised Isserlis recursion on canonical trace-word states: the fast ``wick.expectation``.

A monomial in index form is a network in which every index joins exactly two slots, so it is a
set of *words*: cycles (traces) and chains (bilinear forms, or free ends for matrix values), the
canonical form of ``words.py``.  The expectation of a state only depends on that canonical form,
so it is computed once per state:

    E[x_a F] = mu_a E[F] + sum_b Cov(x_a, x_b) E[F without x_a, x_b]   (Isserlis / Stein),

applied to one occurrence of the random letter with the fewest occurrences (pairing data-matrix
entries X_ai X_bj gives Sigma_ab delta_ij), after which the network is put back in canonical form.
Words without random letters factor out of the state, and groups of words that share no random
letter (independent parts) are expected separately and multiplied.  Coefficients stay integer
polynomials in the sizes of the index spaces (n, d, ...) until the very end, where the Mat's own
(sympy) coefficients multiply them.  The result is identical, key for key, to enumerating every
pairing (``wick.expectation_enumerated``).
"""
from __future__ import annotations

from typing import Mapping

import sympy

from .letters import FREE_LEFT, FREE_RIGHT, ONE, GaussianMatrixLaw, GaussianVectorLaw, Letter
from .letters import space_size
from .poly import Poly
from .tensor import Mat
from .words import canonical_chain, canonical_cycle, contract_network

Key = tuple  # (cycles, chains), canonical
SizePoly = dict  # {exponent tuple over the engine's spaces: int}
Result = dict  # {fixed monomial key: SizePoly}


class _Engine:
    """One expectation: letters, their laws, the index spaces and the memo table."""

    def __init__(self, letters: Mapping[str, Letter], spaces: list[str]) -> None:
        self.letters = dict(letters)
        self.random = frozenset(name for name, l in letters.items() if l.is_random)
        self.symmetric = frozenset(name for name, l in letters.items() if l.symmetric)
        self.spaces = spaces
        self.space_pos = {s: i for i, s in enumerate(spaces)}
        self.zero = (0,) * len(spaces)
        self.memo: dict = {}
        self._factor_cache: dict = {}

    # ----- size factors as exponent tuples -----
    def exps(self, factor: sympy.Expr) -> tuple:
        cached = self._factor_cache.get(factor)
        if cached is None:
            e = [0] * len(self.spaces)
            for base, power in factor.as_powers_dict().items():
                if base == 1:
                    continue
                e[self.space_pos[base.name]] += int(power)
            cached = self._factor_cache[factor] = tuple(e)
        return cached

    # ----- splitting states -----
    def split(self, key: Key) -> tuple[Key, list[Key]]:
        """(fixed words, [groups of random words that share no random letter])."""
        cycles, chains = key
        fixed_c, fixed_h, rand = [], [], []
        for kind, words in ((0, cycles), (1, chains)):
            for w in words:
                names = {name for name, _ in w if name in self.random}
                if names:
                    rand.append((kind, w, names))
                elif kind == 0:
                    fixed_c.append(w)
                else:
                    fixed_h.append(w)
        groups: list = []  # merge words into groups by shared random letters
        for kind, w, names in rand:
            merged = [(kind, w)]
            letters = set(names)
            keep = []
            for g_words, g_letters in groups:
                if g_letters & letters:
                    merged += g_words
                    letters |= g_letters
                else:
                    keep.append((g_words, g_letters))
            groups = keep + [(merged, letters)]
        out = []
        for g_words, _ in groups:
            cs = tuple(sorted(w for kind, w in g_words if kind == 0))
            hs = tuple(sorted(w for kind, w in g_words if kind == 1))
            out.append((cs, hs))
        out.sort()
        return (tuple(sorted(fixed_c)), tuple(sorted(fixed_h))), out

    # ----- one Isserlis step, done on the words (cut and join) -----
    def _flip(self, seq) -> tuple:
        """The transpose of a word fragment; the free-end markers keep their flag."""
        out = []
        for name, t in reversed(seq):
            if name in (FREE_LEFT, FREE_RIGHT) or name in self.symmetric:
                out.append((name, t))
            else:
                out.append((name, not t))
        return tuple(out)

    def _label_space(self, element, side: str) -> str:
        name, t = element
        letter = self.letters[name]
        left, right = (letter.cols, letter.rows) if t else (letter.rows, letter.cols)
        if letter.is_vector:
            return letter.rows
        return left if side == "l" else right

    def step(self, key: Key, occ_a: tuple, occ_b: tuple | None, cov: Letter | None,
             mean: Letter | None) -> tuple[tuple, Key]:
        """Pair occurrence ``occ_a`` with ``occ_b`` (or replace it by ``mean``).

        An occurrence is (kind, word index, position) with kind 0 for cycles and 1 for chains.
        Returns (size exponents of the loops that closed empty, canonical key).
        """
        cycles, chains = key
        words = (list(cycles), list(chains))
        if occ_b is None:  # mean: replace the vector by the mean vector, same orientation
            kind, wi, pos = occ_a
            w = list(words[kind][wi])
            w[pos] = (mean.name, w[pos][1])
            words[kind][wi] = tuple(w)
            return self.zero, self._canonical(words[0], words[1], [], [])
        touched = sorted({(occ_a[0], occ_a[1]), (occ_b[0], occ_b[1])})
        cut_at: dict = {}
        for kind, wi, pos in (occ_a, occ_b):
            cut_at.setdefault((kind, wi), []).append(pos)
        pieces = []  # (elements, start label, end label); a label is (kind, wi, pos, side)
        spaces: dict = {}
        for kind, wi in touched:
            word = words[kind][wi]
            ps = sorted(cut_at[(kind, wi)])
            for p in ps:
                el = word[p]
                if not self.letters[el[0]].is_vector:
                    spaces[(kind, wi, p, "l")] = self._label_space(el, "l")
                    spaces[(kind, wi, p, "r")] = self._label_space(el, "r")
                else:
                    side = "r" if el[1] else "l"
                    spaces[(kind, wi, p, side)] = self._label_space(el, side)
            if kind == 0:
                for i, p in enumerate(ps):
                    q = ps[(i + 1) % len(ps)]
                    elems = word[p + 1:q] if q > p else word[p + 1:] + word[:q]
                    pieces.append((elems, (kind, wi, p, "r"), (kind, wi, q, "l")))
            else:
                prev, start = None, 0
                for p in ps:
                    el = word[p]
                    is_vec = self.letters[el[0]].is_vector
                    if not (is_vec and el[1]):  # a row vector at the start has no left node
                        pieces.append((word[start:p], prev, (kind, wi, p, "l")))
                    prev, start = (kind, wi, p, "r"), p + 1
                    if is_vec and not el[1]:  # a column vector at the end has no right node
                        prev = None
                if prev is not None or start < len(word):
                    pieces.append((word[start:], prev, None))
        rows_cols = []
        for kind, wi, pos in (occ_a, occ_b):
            name, t = words[kind][wi][pos]
            if self.letters[name].is_vector:
                rows_cols.append(((kind, wi, pos, "r" if t else "l"), None))
            else:
                row = (kind, wi, pos, "r" if t else "l")
                col = (kind, wi, pos, "l" if t else "r")
                rows_cols.append((row, col))
        (ra, ca), (rb, cb) = rows_cols
        mid = ((cov.name, False),) if cov is not None else ()
        links = {ra: (rb, mid), rb: (ra, mid)}
        if ca is not None:
            links[ca] = (cb, ())
            links[cb] = (ca, ())
        where = {}
        for i, (_, s0, s1) in enumerate(pieces):
            if s0 is not None:
                where[s0] = (i, 0)
            if s1 is not None:
                where[s1] = (i, 1)
        visited = [False] * len(pieces)
        new_cycles, new_chains = [], []
        empty = [0] * len(self.spaces)

        def walk(i: int, forward: bool) -> tuple:
            seq: list = []
            first = pieces[i][1] if forward else pieces[i][2]
            cur, fwd = i, forward
            while True:
                visited[cur] = True
                elems, s0, s1 = pieces[cur]
                seq.extend(elems if fwd else self._flip(elems))
                exit_label = s1 if fwd else s0
                if exit_label is None:
                    return tuple(seq), False, first
                other, middle = links[exit_label]
                seq.extend(middle)
                if other == first:
                    return tuple(seq), True, first
                cur, end = where[other]
                fwd = end == 0

        for i, (_, s0, s1) in enumerate(pieces):
            if not visited[i] and (s0 is None or s1 is None):
                seq, _, _ = walk(i, s0 is None)
                if seq and (seq[0][0] == FREE_RIGHT or seq[-1][0] == FREE_LEFT or
                            (seq[0][0] != FREE_LEFT and not seq[0][1]
                             and self.letters[seq[0][0]].is_vector)):
                    seq = self._flip(seq)
                new_chains.append(seq)
        for i in range(len(pieces)):
            if not visited[i]:
                seq, _, first = walk(i, True)
                if seq:
                    new_cycles.append(seq)
                else:
                    empty[self.space_pos[spaces[first]]] += 1
        keep_c = [w for i, w in enumerate(words[0]) if (0, i) not in touched]
        keep_h = [w for i, w in enumerate(words[1]) if (1, i) not in touched]
        return tuple(empty), self._canonical(keep_c, keep_h, new_cycles, new_chains)

    def _canonical(self, cycles, chains, new_cycles, new_chains) -> Key:
        sym = self.symmetric
        cs = list(cycles) + [canonical_cycle(w, sym) for w in new_cycles]
        hs = list(chains) + [canonical_chain(w, sym) for w in new_chains]
        if not new_cycles and not new_chains:  # a mean substitution: recanonicalise all
            cs = [canonical_cycle(w, sym) for w in cs]
            hs = [canonical_chain(w, sym) for w in hs]
        return (tuple(sorted(cs)), tuple(sorted(hs)))

    # ----- the recursion -----
    def expect(self, key: Key, rows: str) -> Result:
        """E of a state whose words all contain random letters (one independent group)."""
        memo_key = (key, rows)
        hit = self.memo.get(memo_key)
        if hit is not None:
            return hit
        occurrences: dict = {}
        for kind, words in enumerate(key):
            for wi, w in enumerate(words):
                for pos, (name, _) in enumerate(w):
                    if name in self.random:
                        occurrences.setdefault(name, []).append((kind, wi, pos))
        result: Result = {}
        name = min(occurrences, key=lambda nm: (len(occurrences[nm]), nm))
        law = self.letters[name].law
        occ = occurrences[name]
        has_mean = isinstance(law, GaussianVectorLaw) and law.mean is not None
        if len(occ) % 2 and not has_mean:
            self.memo[memo_key] = result
            return result
        cov = law.row_cov if isinstance(law, GaussianMatrixLaw) else law.cov
        first, others = occ[0], occ[1:]
        if has_mean:
            shift, new_key = self.step(key, first, None, None, law.mean)
            add_poly_into(result, self.expand(new_key, rows), shift)
        for other in others:
            shift, new_key = self.step(key, first, other, cov, None)
            add_poly_into(result, self.expand(new_key, rows), shift)
        self.memo[memo_key] = result
        return result

    def expand(self, key: Key, rows: str) -> Result:
        """E of any canonical state: fixed words times the product over independent groups."""
        fixed, groups = self.split(key)
        if not groups:
            return {fixed: {self.zero: 1}}
        acc = self.expect(groups[0], rows)
        for g in groups[1:]:
            if not acc:
                return {}
            acc = multiply_results(acc, self.expect(g, rows))
        if fixed == ((), ()):
            return acc
        return {merge_keys(fixed, k): p for k, p in acc.items()}


def add_poly_into(result: Result, sub: Result, shift: tuple) -> None:
    """result += sub * (size monomial ``shift``)."""
    for k, poly in sub.items():
        target = result.setdefault(k, {})
        for e, c in poly.items():
            e2 = tuple(a + b for a, b in zip(e, shift)) if any(shift) else e
            v = target.get(e2, 0) + c
            if v:
                target[e2] = v
            else:
                target.pop(e2, None)
        if not target:
            del result[k]


def merge_keys(k1: Key, k2: Key) -> Key:
    return (tuple(sorted(k1[0] + k2[0])), tuple(sorted(k1[1] + k2[1])))


def multiply_results(r1: Result, r2: Result) -> Result:
    out: Result = {}
    for k1, p1 in r1.items():
        for k2, p2 in r2.items():
            target = out.setdefault(merge_keys(k1, k2), {})
            for e1, c1 in p1.items():
                for e2, c2 in p2.items():
                    e = tuple(a + b for a, b in zip(e1, e2))
                    target[e] = target.get(e, 0) + c1 * c2
    return {k: {e: c for e, c in p.items() if c} for k, p in out.items()
            if any(c for c in p.values())}


def _spaces(m: Mat) -> list[str]:
    out = set()
    for term in m.terms:
        out.update(s for s in term.ntypes if s != ONE)
    for letter in m.letters.values():
        out.update(s for s in (letter.rows, letter.cols) if s != ONE)
    return sorted(out)


def _size_expr(poly: SizePoly, spaces: list[str]) -> sympy.Expr:
    syms = [space_size(s) for s in spaces]
    terms = []
    for e, c in poly.items():
        factors = [sympy.Integer(c)] + [s**k for s, k in zip(syms, e) if k]
        terms.append(sympy.Mul(*factors))
    return sympy.Add(*terms)


def expectation(m: Mat) -> Poly:
    """E[m] exactly, as a polynomial in trace words of the fixed letters (memoised Isserlis)."""
    letters = dict(m.letters)
    fixed_letters = {k: v for k, v in letters.items() if not v.is_random}
    engine = _Engine(letters, _spaces(m))
    grouped: dict = {}  # canonical state -> (sympy coefficient, size monomial)
    for term in m.terms:
        if term.coeff == 0:
            continue
        factor, key = contract_network(term.atoms, [], term.ntypes, term.row, term.col, letters)
        gk = (key, engine.exps(factor))
        grouped[gk] = grouped.get(gk, 0) + term.coeff
    out: dict = {}
    for (key, shift), coeff in grouped.items():
        if coeff == 0:
            continue
        result = engine.expand(key, m.rows)
        for k, poly in result.items():
            shifted = {tuple(a + b for a, b in zip(e, shift)): c for e, c in poly.items()}
            out[k] = out.get(k, 0) + coeff * _size_expr(shifted, engine.spaces)
    return Poly(out, fixed_letters, m.rows, m.cols)


def states_visited(m: Mat) -> int:
    """How many canonical states the memoised recursion evaluates for ``m`` (its cost)."""
    letters = dict(m.letters)
    engine = _Engine(letters, _spaces(m))
    for term in m.terms:
        if term.coeff != 0:
            _, key = contract_network(term.atoms, [], term.ntypes, term.row, term.col, letters)
            engine.expand(key, m.rows)
    return len(engine.memo)
