"""Independent tasks (claims, mutants) on several processes (``--jobs N``) or on a running Dask
cluster (``--scheduler ADDRESS``), with the results in the order of the tasks.

A task is a picklable value and a module-level function of it, so a worker (a fresh process, or
a Dask worker that has the package installed) computes exactly what the sequential run computes:
each check draws from its own seeds, so the verdicts are those of ``--jobs 1`` but for timings.
``--jobs`` uses ``concurrent.futures`` with fresh (spawned) processes, each on one BLAS thread;
``--scheduler`` uses
``dask.distributed.Client`` (the optional extra ``pip install -e '.[dask]'``).

A worker that dies mid-task: the task runs once more, and if that fails too it is reported by the
caller's ``lost`` (for a claim, ``inconclusive`` "worker lost"), never as a verdict it did not
reach.  Progress (tasks done / total) is a tqdm bar on stderr where stderr is a terminal.
"""
from __future__ import annotations

import os
import sys
from concurrent.futures import ProcessPoolExecutor, as_completed
from concurrent.futures.process import BrokenProcessPool
from contextlib import contextmanager
from dataclasses import dataclass, field
from multiprocessing import get_context
from typing import Any, Callable, Iterator, Sequence

from .errors import UsageError

ATTEMPTS = 2  # a task whose worker died is run once more, then reported lost


@dataclass(frozen=True)
class Executor:
    """Where tasks run: here (jobs 1), on ``jobs`` local processes, or on a Dask scheduler."""

    jobs: int = 1
    scheduler: str | None = None
    progress: bool = False
    label: str = "tasks"

    def map(self, fn: Callable[[Any], Any], tasks: Sequence[Any],
            lost: Callable[[Any, str], Any], done: Callable[[int, Any], None] | None = None
            ) -> list:
        """[fn(t) for t in tasks], in order; ``lost(task, why)`` stands in for a task whose
        worker died twice; ``done(i, result)`` is called as each result arrives."""
        tasks = list(tasks)
        bar = _bar(len(tasks), self.label, self.progress and len(tasks) > 1)
        try:
            if self.scheduler:
                return _dask_map(self.scheduler, fn, tasks, lost, done, bar)
            if self.jobs > 1 and len(tasks) > 1:
                return _pool_map(min(self.jobs, len(tasks)), fn, tasks, lost, done, bar)
            out = []
            for i, t in enumerate(tasks):
                out.append(fn(t))
                if done is not None:
                    done(i, out[-1])
                bar.update()
            return out
        finally:
            bar.close()


def _bar(total: int, label: str, show: bool):
    from tqdm import tqdm

    return tqdm(total=total, desc=label, unit="task", file=sys.stderr, disable=not show,
                leave=False)


def _pool_map(jobs: int, fn, tasks: list, lost, done, bar) -> list:
    """On ``jobs`` spawned processes, in runs of consecutive tasks (the claims of one paper, the
    mutants of one claim share what a process has cached; about six runs per worker keep the
    load balanced); a broken pool (a worker died) is rebuilt and the unfinished tasks run again,
    up to ATTEMPTS times each."""
    results: list = [None] * len(tasks)
    attempts = [0] * len(tasks)
    pending = list(range(len(tasks)))
    while pending:
        for i in pending:
            attempts[i] += 1
        size = max(1, -(-len(pending) // (6 * jobs)))
        runs = [pending[k:k + size] for k in range(0, len(pending), size)]
        broken = ""
        with _one_thread_each(), ProcessPoolExecutor(jobs, mp_context=get_context("spawn")) \
                as pool:
            futures = {pool.submit(_run_all, fn, [tasks[i] for i in run]): run for run in runs}
            for future in as_completed(futures):
                run = futures[future]
                try:
                    out = future.result()
                except BrokenProcessPool as exc:
                    broken = f"a worker process died ({exc})"
                    continue
                for i, result in zip(run, out):
                    results[i] = result
                    pending.remove(i)
                    if done is not None:
                        done(i, result)
                bar.update(len(run))
        for i in [i for i in pending if attempts[i] >= ATTEMPTS]:
            results[i] = lost(tasks[i], f"worker lost: {broken}; retried once")
            pending.remove(i)
            if done is not None:
                done(i, results[i])
            bar.update()
    return results


def _run_all(fn, tasks: list) -> list:
    """A worker's run of consecutive tasks."""
    return [fn(t) for t in tasks]


@contextmanager
def _one_thread_each() -> Iterator[None]:
    """Workers spawned inside the block run BLAS and OpenMP on one thread each: N workers on N
    cores, not N x N threads contending (they read these variables when they import numpy)."""
    names = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
    saved = {k: os.environ.get(k) for k in names}
    os.environ.update({k: "1" for k in names})
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _dask_map(address: str, fn, tasks: list, lost, done, bar) -> list:
    """On the Dask cluster at ``address``; a task whose workers died (KilledWorker, after the
    scheduler's own reassignments) or whose attempt failed twice is reported lost."""
    try:
        from distributed import Client, as_completed as dask_completed
    except ImportError:
        raise UsageError("--scheduler needs dask.distributed: pip install -e '.[dask]'") from None
    try:
        client = Client(address, timeout="5s")
    except (OSError, TimeoutError, ValueError) as exc:
        raise UsageError(f"--scheduler {address}: cannot reach a Dask scheduler there "
                         f"({type(exc).__name__}: {exc})") from None
    results: list = [None] * len(tasks)
    try:
        futures = client.map(fn, tasks, pure=False, retries=ATTEMPTS - 1)
        index = {f.key: i for i, f in enumerate(futures)}
        for future in dask_completed(futures):
            i = index[future.key]
            try:
                results[i] = future.result()
            except Exception as exc:  # noqa: BLE001 - KilledWorker, a comm error: the worker is gone
                if not _worker_lost(exc):
                    raise
                results[i] = lost(tasks[i], f"worker lost: {type(exc).__name__}: {exc}")
            if done is not None:
                done(i, results[i])
            bar.update()
    finally:
        client.close()
    return results


def _worker_lost(exc: BaseException) -> bool:
    """Whether a Dask task failed because its worker went away (not because the task raised)."""
    from distributed import KilledWorker
    from distributed.comm.core import CommClosedError

    return isinstance(exc, (KilledWorker, CommClosedError, OSError))


# ------------------------------------------------------------------------------- check tasks
@dataclass(frozen=True)
class CheckTask:
    """One claim to check: its id and the keyword arguments of ``runner.check_claim``."""

    claim_id: str
    options: dict = field(default_factory=dict)


def run_check(task: CheckTask):
    """A worker's side of a CheckTask: the claim from the registry, checked as usual."""
    from .registry import find
    from .runner import check_claim

    return check_claim(find(task.claim_id), **task.options)


def lost_check(task: CheckTask, why: str):
    """The verdict of a claim whose worker died twice: inconclusive, with why."""
    from .claim import TierResult
    from .registry import find
    from .verdict import Verdict

    claim = find(task.claim_id)
    o = task.options
    tiers = {t: TierResult("error", reason=why) for t in o.get("tiers", ())}
    return Verdict(claim.id, claim.title, claim.paper, "inconclusive", tiers, o.get("seed", 0),
                   o.get("budget", "quick"), o.get("device", "auto"), reason=why)


def check_all(claims: Sequence, options: dict, overrides: dict, executor: Executor) -> list:
    """The verdicts of ``claims`` (each with its own overrides) in their order."""
    tasks = [CheckTask(c.id, {**options, "overrides": overrides.get(c.id, {})}) for c in claims]
    return executor.map(run_check, tasks, lost_check)


def jobs_option(text: str) -> int:
    """A positive number of worker processes (UsageError otherwise)."""
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"--jobs {text!r} is not an integer") from None
    if value < 1:
        raise UsageError(f"--jobs {value}: at least 1")
    return value
