"""Runs of different head counts trained as one batch: every run padded to the largest count with
heads held at zero by a mask."""
from __future__ import annotations

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
