"""--jobs and --scheduler run the same tasks elsewhere: the same verdicts and mutation outcomes
as one process, in the same order; a task whose worker dies is retried once, then reported
inconclusive ("worker lost"), never a verdict it did not reach."""
import json
import os

import pytest

from verify.cli import main
from verify.parallel import CheckTask, Executor, check_all, lost_check
from verify.registry import find

CLAIMS = ["ahn2023.lemma7", "ahn2023.lemma9", "ahn2023.thm4", "xie2025.eq9"]
OPTIONS = {"tiers": ["symbolic"], "budget": "quick", "device": "cpu", "seed": 0}


def _without_timings(v: dict) -> dict:
    """A verdict's JSON without what may differ between runs: the seconds."""
    def strip(x):
        if isinstance(x, dict):
            return {k: strip(val) for k, val in x.items() if k != "seconds"}
        if isinstance(x, list):
            return [strip(val) for val in x]
        return x
    return strip(v)


def _verdicts(executor):
    claims = [find(c) for c in CLAIMS]
    return [_without_timings(v.as_dict()) for v in check_all(claims, OPTIONS, {}, executor)]


def test_jobs_2_gives_the_verdicts_of_jobs_1_in_the_same_order():
    one = _verdicts(Executor(jobs=1))
    two = _verdicts(Executor(jobs=2))
    assert [v["claim"] for v in two] == CLAIMS
    assert two == one


def test_the_cli_accepts_jobs_and_refuses_bad_values(capsys):
    code = main(["check", *CLAIMS[:2], "--budget", "quick", "--tier", "symbolic", "--jobs", "2",
                 "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and [v["claim"] for v in out] == CLAIMS[:2]
    for bad, needle in (("0", "at least 1"), ("two", "not an integer")):
        assert main(["check", "ahn2023.lemma9", "--jobs", bad]) == 2
        assert needle in capsys.readouterr().err


def die_always(task):
    """A task whose worker process dies (as an out-of-memory kill would end it)."""
    os._exit(1)


def test_a_task_whose_worker_dies_twice_is_inconclusive_worker_lost():
    tasks = [CheckTask("ahn2023.lemma9", OPTIONS)]
    (v,) = Executor(jobs=2).map(die_always, tasks * 2, lost_check)[:1]
    assert v.verdict == "inconclusive" and v.reason.startswith("worker lost")
    assert v.tiers["symbolic"].status == "error"


def test_mutate_jobs_2_gives_the_outcomes_of_jobs_1(capsys):
    def run(jobs):
        assert main(["mutate", "ahn2023.lemma9", "--json", "--jobs", str(jobs)]) in (0, 1)
        report = json.loads(capsys.readouterr().out)
        return [(o["text"], o["status"], o["verdict"]) for c in report["claims"]
                for f in c["formulas"] for o in f["mutant_results"]], report["totals"]

    assert run(2) == run(1)


@pytest.fixture(scope="module")
def cluster():
    distributed = pytest.importorskip("distributed")
    import dask

    # a task that kills its worker is given up after one retry (the default allows three)
    with dask.config.set({"distributed.scheduler.allowed-failures": 1}):
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                      dashboard_address=None) as c:
            yield c


def test_a_dask_cluster_of_two_workers_gives_the_verdicts_of_a_plain_run(cluster):
    assert _verdicts(Executor(scheduler=cluster.scheduler_address)) == _verdicts(Executor())


def test_a_task_that_kills_its_dask_workers_is_reported_lost(cluster):
    tasks = [CheckTask("ahn2023.lemma9", OPTIONS)]
    (v,) = Executor(scheduler=cluster.scheduler_address).map(die_always, tasks, lost_check)
    assert v.verdict == "inconclusive" and "worker lost" in v.reason


def test_an_unreachable_scheduler_exits_2(capsys):
    pytest.importorskip("distributed")
    code = main(["check", "ahn2023.lemma9", "--scheduler", "tcp://127.0.0.1:9"])
    err = capsys.readouterr().err
    assert code == 2 and "cannot reach a Dask scheduler" in err and err.count("\n") == 1
