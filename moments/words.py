"""Canonical trace words and chains: the normal form of contracted tensor networks.

A closed network of fixed letters decomposes into *cycles* (traces of matrix words, e.g.
tr(Sigma A^T Sigma A)) and *chains* (bilinear forms u^T M_1 ... M_k v between vector letters).
A word is a tuple of ``(name, transposed)`` pairs; a chain starts with a transposed (row) vector and
ends with a plain (column) vector.  Matrix-valued results keep free ends, written as the markers
``<L>`` (row index) and ``<R>`` (column index).

Canonical forms: tr(w) = tr(rotation of w) = tr(w^T), and u^T M v = v^T M^T u; symmetric letters
never carry a transpose.  Two monomials are equal as polynomials in the letters' entries iff their
canonical forms are equal, so like terms can be collected by key.
"""
from __future__ import annotations

from typing import Iterable, Mapping, Sequence

import sympy

from .letters import FREE_LEFT, FREE_RIGHT, ONE, Letter, space_size

Word = tuple  # tuple[(str, bool), ...]
Monomial = tuple  # (cycles: tuple[Word, ...], chains: tuple[Word, ...])


def flip(word: Sequence, symmetric: frozenset) -> Word:
    """The transpose of a word: reversed, each letter transposed (symmetric letters unchanged)."""
    return tuple((name, t if name in symmetric else not t) for name, t in reversed(word))


def canonical_cycle(word: Sequence, symmetric: frozenset) -> Word:
    """The least rotation of ``word`` or of its transpose (trace is cyclic and transpose-invariant)."""
    word = tuple(word)
    k = len(word)
    best = None
    for cand in (word, flip(word, symmetric)):
        for r in range(k):
            rot = cand[r:] + cand[:r]
            if best is None or rot < best:
                best = rot
    return best


def canonical_chain(word: Sequence, symmetric: frozenset) -> Word:
    """A chain with free ends keeps its orientation; a bilinear form picks the lesser direction."""
    word = tuple(word)
    if word[0][0] == FREE_LEFT or word[-1][0] == FREE_RIGHT:
        return word
    other = flip(word, symmetric)
    return min(word, other)


class _UnionFind:
    def __init__(self, size: int) -> None:
        self.parent = list(range(size))

    def find(self, k: int) -> int:
        parent = self.parent
        while parent[k] != k:
            parent[k] = parent[parent[k]]
            k = parent[k]
        return k

    def union(self, a: int, b: int) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def contract_network(atoms: Sequence, unions: Iterable[tuple[int, int]], ntypes: Sequence[str],
                     row: int | None, col: int | None,
                     letters: Mapping[str, Letter]) -> tuple[sympy.Expr, Monomial]:
    """Normal form of a network of fixed letters after identifying the node pairs in ``unions``.

    Returns ``(size_factor, monomial)``: every closed loop of identities contributes the size of
    its space (``d``, ``n``); the letters form cycles and chains in canonical form.
    """
    uf = _UnionFind(len(ntypes))
    for a, b in unions:
        uf.union(a, b)
    symmetric = frozenset(name for name, l in letters.items() if l.symmetric)
    incid: dict[int, list] = {}
    mapped = []
    for idx, (name, nodes) in enumerate(atoms):
        roots = tuple(uf.find(k) for k in nodes)
        mapped.append((name, roots))
        for slot, r in enumerate(roots):
            incid.setdefault(r, []).append((idx, slot))
    free_row = uf.find(row) if row is not None else None
    free_col = uf.find(col) if col is not None else None
    if free_row is not None:
        incid.setdefault(free_row, []).append(("L", 0))
    if free_col is not None:
        incid.setdefault(free_col, []).append(("R", 0))

    factor = sympy.Integer(1)
    roots = {uf.find(k) for k in range(len(ntypes))}
    for r in roots:
        if r not in incid:
            factor *= space_size(ntypes[r])
        elif len(incid[r]) != 2:
            raise AssertionError(f"index node used {len(incid[r])} times; the network is not closed")

    def other_end(node: int, came_from) -> tuple:
        a, b = incid[node]
        return b if a == came_from else a

    visited: set[int] = set()
    chains: list[Word] = []
    cycles: list[Word] = []

    def walk(start_node: int, came_from, word: list) -> list:
        node, prev = start_node, came_from
        while True:
            nxt = other_end(node, prev)
            idx, slot = nxt
            if idx == "R":
                word.append((FREE_RIGHT, False))
                return word
            if idx == "L":
                word.append((FREE_LEFT, False))
                return word
            visited.add(idx)
            name, nodes = mapped[idx]
            if len(nodes) == 1:  # arrived at a column vector
                word.append((name, False))
                return word
            transposed = slot == 1
            word.append((name, transposed and name not in symmetric))
            node = nodes[1 - slot]
            prev = (idx, 1 - slot)

    # chains from free ends first (their orientation is fixed), then from vectors
    if free_row is not None:
        chains.append(tuple(walk(free_row, ("L", 0), [(FREE_LEFT, False)])))
    if free_col is not None and not any(w[-1][0] == FREE_RIGHT for w in chains):
        reversed_word = walk(free_col, ("R", 0), [(FREE_RIGHT, False)])
        chains.append(_reverse_free(reversed_word, symmetric))
    for idx, (name, nodes) in enumerate(mapped):
        if idx in visited or len(nodes) != 1:
            continue
        visited.add(idx)
        chains.append(tuple(walk(nodes[0], (idx, 0), [(name, True)])))
    for idx, (name, nodes) in enumerate(mapped):
        if idx in visited:
            continue
        visited.add(idx)
        word = [(name, False)]
        node, prev = nodes[1], (idx, 1)
        while True:
            nidx, slot = other_end(node, prev)
            if nidx == idx and slot == 0:
                break
            visited.add(nidx)
            nname, nnodes = mapped[nidx]
            word.append((nname, slot == 1 and nname not in symmetric))
            node, prev = nnodes[1 - slot], (nidx, 1 - slot)
        cycles.append(canonical_cycle(word, symmetric))
    chains = [canonical_chain(w, symmetric) for w in chains]
    return factor, (tuple(sorted(cycles)), tuple(sorted(chains)))


def _reverse_free(word: list, symmetric: frozenset) -> Word:
    """A chain walked from the free right end, turned around so that it ends with ``<R>``."""
    inner = word[1:-1]
    start = word[-1]
    # it ended at a vector (or at <L>): that end is now the start, a row vector
    head = [start] if start[0] == FREE_LEFT else [(start[0], True)]
    body = flip(inner, symmetric)
    return tuple(head) + body + ((FREE_RIGHT, False),)


def word_letters(word: Word) -> list[str]:
    return [name for name, _ in word if name not in (FREE_LEFT, FREE_RIGHT)]


def is_free(word: Word) -> bool:
    return word[0][0] == FREE_LEFT or word[-1][0] == FREE_RIGHT


def word_tex(word: Word, letters: Mapping[str, Letter], cycle: bool) -> str:
    """LaTeX for a word: ``\\operatorname{tr}(\\Sigma A^\\top)`` or ``u^\\top A v``."""
    parts = []
    for name, t in word:
        if name in (FREE_LEFT, FREE_RIGHT):
            continue
        tex = letters[name].tex() if name in letters else name
        parts.append(tex + ("^{\\top}" if t else ""))
    body = " ".join(parts) if parts else "I"
    return f"\\operatorname{{tr}}({body})" if cycle else body


def word_str(word: Word, cycle: bool) -> str:
    parts = [name + ("'" if t else "") for name, t in word if name not in (FREE_LEFT, FREE_RIGHT)]
    body = "*".join(parts) if parts else "I"
    return f"tr({body})" if cycle else body


__all__ = ["ONE", "canonical_chain", "canonical_cycle", "contract_network", "flip", "word_tex",
           "word_str", "is_free", "word_letters"]
