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
    # torch's own L-BFGS is charged to the trainer's line that calls it, naming torch's module
    assert any(site.startswith("models/trainers.py:") and "via torch/optim/lbfgs.py" in site
               for site, _ in row["sites"])
    assert "gatmiry2024.fig2" in capsys.readouterr().out


def test_reading_a_tensor_counts_and_reading_a_step_counter_does_not():
    import torch

    bench = _bench()
    x = torch.ones(3, requires_grad=True)
    opt = torch.optim.Adam([x], lr=0.1)
    with bench.counting_mode() as mode, bench.kernel_mode() as kernels:
        for _ in range(3):
            opt.zero_grad()
            (x ** 2).sum().backward()
            opt.step()
        float(x.detach().sum())
    # Adam's step counter is a host tensor on every device: only float(...) of the sum waits
    assert sum(mode.sites.values()) == 1 and kernels.kernels > 10
