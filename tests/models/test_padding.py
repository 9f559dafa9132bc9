"""The head-padding mask shared by the batched runs of several head counts."""
import pytest
import torch

from models.padding import head_layout, head_mask, row_sums


def test_each_run_keeps_its_own_heads_once_per_restart():
    m = head_mask((1, 3, 2), 3, repeat=2)
    assert m.shape == (6, 3) and m.dtype == torch.float64
    assert m.tolist() == [[1, 0, 0], [1, 0, 0], [1, 1, 1], [1, 1, 1], [1, 1, 0], [1, 1, 0]]


@pytest.mark.parametrize("heads", [(0, 2), (2, 4), (-1,)])
def test_a_head_count_outside_the_padding_is_refused(heads):
    with pytest.raises(ValueError, match="do not fit"):
        head_mask(heads, 3)


def test_the_layout_lists_each_real_head_and_pair_once_in_its_padded_place():
    lay = head_layout((1, 3, 2), 3, repeat=1)
    assert lay.rows == 3 and lay.top == 3 and lay.slots == 3
    assert [t.tolist() for t in lay.heads] == [[0, 1, 1, 1, 2, 2], [0, 0, 1, 2, 0, 1]]
    # triu_indices(3, 3, 1): slots 0 = (0, 1), 1 = (0, 2), 2 = (1, 2)
    assert [t.tolist() for t in lay.pairs] == [[1, 1, 1, 2], [0, 0, 1, 0], [1, 2, 2, 1],
                                               [0, 1, 2, 0]]


def test_row_sums_put_each_value_in_its_slot():
    values = torch.tensor([1.0, 2.0, 4.0, 8.0], dtype=torch.float64, requires_grad=True)
    got = row_sums(values, torch.tensor([0, 0, 2, 2]), torch.tensor([1, 0, 0, 2]), 3, 3)
    assert got.tolist() == [3.0, 0.0, 12.0]
    (grad,) = torch.autograd.grad(got.sum(), values)
    assert grad.tolist() == [1.0] * 4


def test_the_layout_slots_are_those_of_triu_indices():
    lay = head_layout((5,), 5)
    i, j = torch.triu_indices(5, 5, 1)
    assert lay.pairs[1].tolist() == i.tolist() and lay.pairs[2].tolist() == j.tolist()
    assert lay.pairs[3].tolist() == list(range(10))
    one = head_layout((1, 1), 1)
    assert one.slots == 0 and all(len(t) == 0 for t in one.pairs)
