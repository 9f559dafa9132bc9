"""bench/syncs.py counts a train tier's read-backs to the host, by source line, and its
operations (here on cpu, at --budget quick)."""
import json

from tests.bench import bench_module


def _bench():
    return bench_module("syncs")


def test_a_row_names_the_lines_that_read_back(tmp_path, capsys):
    out = tmp_path / "rows.json"
    assert _bench().main(["--claims", "gatmiry2024.fig2", "--json", str(out)]) == 0
    (row,) = json.loads(out.read_text())
    assert row["claim"] == "gatmiry2024.fig2" and row["tier"] == "pass"
    assert row["kernels"] > 1000 and row["read_backs"] == sum(n for _, n in row["sites"])
    # torch's strong-Wolfe line search is charged to the line of ours that calls it, naming
    # torch's module
    assert any(site.startswith("models/lbfgs.py:") and "via torch/optim/lbfgs.py" in site
               for site, _ in row["sites"])
    assert "gatmiry2024.fig2" in capsys.readouterr().out


def test_reading_a_tensor_counts_and_reading_a_step_counter_does_not():
    import torch

    bench = _bench()
    x = torch.ones(3, requires_grad=True)
    opt = torch.optim.Adam([x], lr=0.1)
    sites, copies, kernels = bench.counting_modes()
    with copies, kernels:
        for _ in range(3):
            opt.zero_grad()
            (x ** 2).sum().backward()
            opt.step()
        float(x.detach().sum())  # a scalar read
        x.detach().tolist()  # a copy
        x.detach().add_(x.detach(), alpha=-x.detach()[0])  # a number torch reads from a tensor
    # Adam's step counter is a host tensor on every device: it is not counted
    assert sum(sites.values()) == 3 and kernels.kernels > 10


def test_a_boolean_mask_index_counts_and_a_where_does_not():
    """x[mask] and x[mask] = v turn the mask into indices with nonzero, which on cuda reads the
    count back; torch.where and masked_fill select elementwise and read nothing."""
    import torch

    bench = _bench()
    x, mask = torch.arange(4.0), torch.tensor([True, False, True, False])
    sites, copies, kernels = bench.counting_modes()
    with copies, kernels:
        y = x[mask]          # one
        x[~mask] = 0.0       # two
        x.nonzero()          # three
        torch.where(mask, x, -x)
        x.masked_fill(mask, 1.0)
        x[1:3] = 2.0         # a slice, not a mask
    assert sum(sites.values()) == 3 and y.shape == (2,)
