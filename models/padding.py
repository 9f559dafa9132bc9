"""Runs of different head counts trained as one batch: every run padded to the largest count with
heads held at zero by a mask."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import torch


def head_mask(heads: Sequence[int], top: int, repeat: int = 1, dtype: torch.dtype = torch.float64,
              device: torch.device | str = "cpu") -> torch.Tensor:
    """(len(heads) * repeat, top): row i * repeat + j is 1 on the first heads[i] heads, 0 on the
    padding (``repeat`` rows per run, its restarts).  A weight multiplied by it has a zero gradient
    on the padding, so an optimiser that starts a padded head at zero leaves it there."""
    counts = [int(h) for h in heads]
    if any(h <= 0 or h > top for h in counts):
        raise ValueError(f"head counts {counts} do not fit in {top} heads")
    counts = torch.tensor(counts, device=device).repeat_interleave(int(repeat))
    return (torch.arange(top, device=device)[None, :] < counts[:, None]).to(dtype)


@dataclass(frozen=True)
class HeadLayout:
    """Where the real heads and head pairs of padded rows lie, for sums that skip the padding.

    Row r of a (rows, top) padding holds counts[r] real heads.  ``heads`` = (row, head) of every
    real head and ``pairs`` = (row, i, j, slot) of every pair i < j of real heads, row by row;
    ``slot`` is the pair's index among the top(top-1)/2 pairs of ``torch.triu_indices(top, top,
    1)``.  A sum over a row's terms scattered back to these slots (unique: no atomic adds) and
    summed per row adds exactly the terms the padded layout adds, less its exact zeros."""

    rows: int
    top: int
    heads: tuple[torch.Tensor, torch.Tensor]
    pairs: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]

    @property
    def slots(self) -> int:
        return self.top * (self.top - 1) // 2


def head_layout(heads: Sequence[int], top: int, repeat: int = 1,
                device: torch.device | str = "cpu") -> HeadLayout:
    """The ``HeadLayout`` of ``head_mask(heads, top, repeat)``'s rows (built once, on the host:
    no data-dependent shapes while training)."""
    head_mask(heads, top)  # refuses counts that do not fit
    counts = [int(h) for h in heads for _ in range(int(repeat))]
    # the pairs i < j in the order of torch.triu_indices(top, top, 1) (row by row)
    order = [(i, j) for i in range(top) for j in range(i + 1, top)]
    singles = [(r, h) for r, c in enumerate(counts) for h in range(c)]
    pairs = [(r, i, j, k) for r, c in enumerate(counts) for k, (i, j) in enumerate(order) if j < c]

    def column(rows: list, at: int) -> torch.Tensor:
        return torch.tensor([row[at] for row in rows], dtype=torch.long, device=device)

    return HeadLayout(len(counts), top, (column(singles, 0), column(singles, 1)),
                      tuple(column(pairs, k) for k in range(4)))


def row_sums(values: torch.Tensor, rows: torch.Tensor, slots: torch.Tensor, n_rows: int,
             n_slots: int) -> torch.Tensor:
    """sum of ``values`` per row, each value at its (row, slot) of a dense (n_rows, n_slots)
    table (unique places: deterministic on every device), zeros elsewhere."""
    dense = values.new_zeros(n_rows * n_slots).index_put((rows * n_slots + slots,), values)
    return dense.reshape(n_rows, n_slots).sum(1)
