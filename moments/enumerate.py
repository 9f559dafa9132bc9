"""Brute-force Wishart moments by enumerating every Wick pairing: the independent baseline.

W = sum_i x_i x_i^T with x_i ~ N(0, Sigma).  Write each factor W of a word as the slot
x_{i_a} x_{i_a}^T with two half-edges, L_a (the row index) and R_a (the column index), sharing the
sample index i_a.  Isserlis' theorem sums over the perfect matchings of the 2t half-edges: a pair
inserts Sigma between the two feature indices and identifies the two sample indices.  For one
matching, the sample indices fall into ``e`` classes (a factor n^e), the feature indices close
into cycles through Sigma (a factor p_r = tr Sigma^r for a cycle with r pairs) and, for a matrix
word, one open path from the row end to the column end (Sigma^s).  This module counts matchings
by (s, mu, e): (2t-1)!! of them, which is what ``wishart.py`` avoids.
"""
from __future__ import annotations

import itertools
import time
from typing import Iterator

from .partitions import Partition


def matchings(n_points: int) -> Iterator[list[int]]:
    """All perfect matchings of 0..n_points-1 as partner lists (the same list, updated in place)."""
    partner = [-1] * n_points

    def rec(free: list[int]) -> Iterator[list[int]]:
        if not free:
            yield partner
            return
        a, rest = free[0], free[1:]
        for i, b in enumerate(rest):
            partner[a], partner[b] = b, a
            yield from rec(rest[:i] + rest[i + 1:])

    if n_points % 2:
        return iter(())
    return rec(list(range(n_points)))


def _layout(m: int, lam: Partition) -> tuple[int, list[int]]:
    """Slots 0..t-1 (the matrix word first, then one cycle per part of lam) and the feature
    adjacency of the half-edges 2a (L_a) and 2a+1 (R_a); -1 marks a free end of the matrix word."""
    t = m + sum(lam)
    adj = [-1] * (2 * t)
    words = [(0, m, False)]
    start = m
    for part in lam:
        words.append((start, part, True))
        start += part
    for first, length, cyclic in words:
        for a in range(first, first + length - 1):
            adj[2 * a + 1], adj[2 * a + 2] = 2 * a + 2, 2 * a + 1
        if cyclic and length:
            last = first + length - 1
            adj[2 * last + 1], adj[2 * first] = 2 * first, 2 * last + 1
    return t, adj


def _classify(partner: list[int], adj: list[int], t: int, m: int) -> tuple[int, tuple, int]:
    """(s, mu, e) of one matching."""
    seen = [False] * t  # sample classes: cycles of slot -> partner's slot
    e = 0
    for a in range(t):
        if seen[a]:
            continue
        e += 1
        h = 2 * a
        while True:
            seen[h // 2] = True
            h = partner[h] ^ 1  # across the pair, then to the other half-edge of that slot
            if h // 2 == a:
                break
    visited = [False] * (2 * t)
    s = 0
    if m:
        h, count = 0, 0  # L_0 is next to the row end; walk pair, adjacency, pair, ...
        while True:
            visited[h] = True
            g = partner[h]
            visited[g] = True
            count += 1
            if adj[g] == -1:
                break
            h = adj[g]
        s = count
    cycles = []
    for h0 in range(2 * t):
        if visited[h0]:
            continue
        h, count = h0, 0
        while True:
            visited[h] = True
            g = partner[h]
            visited[g] = True
            count += 1
            h = adj[g]
            if h == h0:
                break
        cycles.append(count)
    return s, tuple(sorted(cycles, reverse=True)), e


def wishart_moment(m: int, lam: Partition = (), limit: int | None = None) -> dict:
    """E[W^m p_lam(W)] by enumeration: {(s, mu, e): count} in the keys of
    ``wishart.WishartPolynomial`` (s = 0 when m = 0).  ``limit`` stops after that many
    matchings (for timing a prefix)."""
    t, adj = _layout(m, tuple(lam))
    out: dict = {}
    for partner in itertools.islice(matchings(2 * t), limit):
        key = _classify(partner, adj, t, m)
        out[key] = out.get(key, 0) + 1
    return out


def trace_moment(k: int, limit: int | None = None) -> dict:
    """E tr W^k = E[p_(k)(W)] by enumeration: {(0, rho, e): count}."""
    return wishart_moment(0, (k,), limit)


def pairings(t: int) -> int:
    """(2t-1)!!, the number of matchings of 2t half-edges."""
    out = 1
    for i in range(1, 2 * t, 2):
        out *= i
    return out


def timed_trace_moment(k: int, budget_s: float) -> tuple[float, bool, int]:
    """Seconds to enumerate E tr W^k, or an extrapolation when it would exceed ``budget_s``.

    Returns ``(seconds, complete, matchings_done)``: when not complete, seconds is the measured
    time per matching on a prefix times (2k-1)!!.
    """
    t, adj = _layout(0, (k,))
    total = pairings(k)
    start = time.perf_counter()
    done = 0
    out: dict = {}
    for partner in matchings(2 * t):
        key = _classify(partner, adj, t, 0)
        out[key] = out.get(key, 0) + 1
        done += 1
        if done % 4096 == 0 and time.perf_counter() - start > budget_s:
            break
    elapsed = time.perf_counter() - start
    if done == total:
        return elapsed, True, done
    return elapsed / done * total, False, done
