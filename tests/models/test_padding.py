"""The head-padding mask shared by the batched runs of several head counts."""
import pytest
import torch

from models.padding import head_mask


def test_each_run_keeps_its_own_heads_once_per_restart():
    m = head_mask((1, 3, 2), 3, repeat=2)
    assert m.shape == (6, 3) and m.dtype == torch.float64
    assert m.tolist() == [[1, 0, 0], [1, 0, 0], [1, 1, 1], [1, 1, 1], [1, 1, 0], [1, 1, 0]]


@pytest.mark.parametrize("heads", [(0, 2), (2, 4), (-1,)])
def test_a_head_count_outside_the_padding_is_refused(heads):
    with pytest.raises(ValueError, match="do not fit"):
        head_mask(heads, 3)
