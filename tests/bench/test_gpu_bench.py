"""bench/gpu.py runs a claim's train tier and reports its row (here on cpu, at --budget quick)."""
import json

from tests.bench import bench_module


def _bench():
    return bench_module("gpu")


def test_a_row_per_train_tier_with_its_time_and_verdict(tmp_path, capsys):
    out = tmp_path / "rows.json"
    assert _bench().main(["--device", "cpu", "--budget", "quick", "--claims", "gatmiry2024.fig2",
                          "--json", str(out)]) == 0
    rows = json.loads(out.read_text())["rows"]
    assert [r["claim"] for r in rows] == ["gatmiry2024.fig2"]
    assert rows[0]["tier"] == "pass" and rows[0]["seconds"] > 0
    assert rows[0]["utilisation_mean"] is None  # no GPU: nothing sampled
    assert "gatmiry2024.fig2" in capsys.readouterr().out


def test_only_claims_with_a_train_tier():
    import pytest

    with pytest.raises(SystemExit, match="no train tier"):
        _bench().train_claims(["ahn2023.lemma1"])


def test_papers_take_turns_so_a_deadline_cuts_each_paper():
    assert _bench().interleave(["a.1", "a.2", "a.3", "b.1", "c.1", "c.2"]) == \
        ["a.1", "b.1", "c.1", "a.2", "c.2", "a.3"]
