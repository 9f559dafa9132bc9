"""Integer partitions: enumeration, a global index ordered by size, and small helpers.

Partitions are tuples of positive integers in non-increasing order, ``()`` being the empty
partition of 0.  :class:`PartitionIndex` numbers all partitions of size <= K so that those of size
<= t form a prefix ``[0, P(t))`` with ``P(t) = p(0) + ... + p(t)``; the Wishart engine stores
vectors over this prefix basis (``wishart.py``).
"""
from __future__ import annotations

from functools import lru_cache
from typing import Iterator

Partition = tuple


def partitions_of(k: int, largest: int | None = None) -> Iterator[Partition]:
    """All partitions of ``k`` with parts <= ``largest``, in reverse lexicographic order."""
    if k < 0:
        raise ValueError("partitions of a negative number")
    largest = k if largest is None else min(largest, k)
    if k == 0:
        yield ()
        return
    for first in range(largest, 0, -1):
        for rest in partitions_of(k - first, first):
            yield (first,) + rest


@lru_cache(maxsize=128)
def partition_list(k: int) -> tuple:
    """All partitions of k as a tuple, in the order of ``partitions_of`` (built from k-1's)."""
    if k == 0:
        return ((),)
    out = []
    for first in range(k, 0, -1):
        rest = k - first
        out.extend((first,) + mu for mu in partition_list(rest) if not mu or mu[0] <= first)
    return tuple(out)


@lru_cache(maxsize=None)
def count(k: int) -> int:
    """p(k), the number of partitions of k (Euler's pentagonal recurrence)."""
    if k < 0:
        return 0
    table = [1] + [0] * k
    for m in range(1, k + 1):
        total, j = 0, 1
        while True:
            g1 = j * (3 * j - 1) // 2
            if g1 > m:
                break
            sign = 1 if j % 2 else -1
            total += sign * table[m - g1]
            g2 = j * (3 * j + 1) // 2
            if g2 <= m:
                total += sign * table[m - g2]
            j += 1
        table[m] = total
    return table[k]


def insert(lam: Partition, part: int) -> Partition:
    """lam with one more part ``part`` (kept non-increasing)."""
    i = 0
    while i < len(lam) and lam[i] >= part:
        i += 1
    return lam[:i] + (part,) + lam[i:]


def remove(lam: Partition, part: int) -> Partition:
    """lam with one part ``part`` removed."""
    i = lam.index(part)
    return lam[:i] + lam[i + 1:]


def multiplicities(lam: Partition) -> dict[int, int]:
    out: dict[int, int] = {}
    for part in lam:
        out[part] = out.get(part, 0) + 1
    return out


def output_monomials(k: int) -> int:
    """sum over partitions rho of k of (k + 1 - len(rho)): the number of monomials n^e p_rho in
    E tr W^k (e runs over 1 .. k + 1 - len(rho)), the least work any exact method must do."""
    return sum(k + 1 - len(rho) for rho in partition_list(k))


class PartitionIndex:
    """All partitions of size <= K, numbered by size (then reverse lexicographically)."""

    def __init__(self, K: int) -> None:
        self.K = K
        self.items: list[Partition] = []
        self.offset: list[int] = []  # offset[t] = P(t - 1): first index of the partitions of t
        for t in range(K + 1):
            self.offset.append(len(self.items))
            self.items.extend(partition_list(t))
        self.offset.append(len(self.items))
        self.index = {lam: i for i, lam in enumerate(self.items)}

    def prefix(self, t: int) -> int:
        """P(t): the number of partitions of size <= t (0 for t < 0)."""
        return 0 if t < 0 else self.offset[t + 1]


@lru_cache(maxsize=8)
def partition_index(K: int) -> PartitionIndex:
    return PartitionIndex(K)
