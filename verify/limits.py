"""Bounded work: ``--timeout`` (a time limit per claim), ``memory_limit`` (a bound on the resident
memory of a block, for mutants whose exact arithmetic explodes) and the work estimate that refuses,
before any work, sizes a budget cannot finish in ten minutes.

The time limit is an alarm in the main thread (``signal.setitimer``): it interrupts Python code
between bytecodes, so a check stopped by it ends within moments unless one native call (a large
matrix product) runs long; ``TimedOut`` is a BaseException, so that no check's ``except
Exception`` turns it into that check's own error.  Off the main thread there is no alarm, and
the limit is not enforced (the caller is told by ``enforceable``).
"""
from __future__ import annotations

import math
import os
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Iterator, Mapping

from .errors import UsageError


class TimedOut(BaseException):
    """Raised by the alarm of ``time_limit`` in the code it interrupts; ``limit`` is the token
    that ``time_limit`` yielded, so that nested limits each catch only their own."""

    def __init__(self, limit: object = None) -> None:
        super().__init__(limit)
        self.limit = limit


def enforceable() -> bool:
    """Whether ``time_limit`` can interrupt here (the main thread, on a system with alarms)."""
    return hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()


@contextmanager
def time_limit(seconds: float | None) -> Iterator[object]:
    """Raise TimedOut(token) in the block after ``seconds`` (None: no limit); yields the token.
    Nested limits keep the earlier deadline: an inner limit later than the outer one is not
    armed, and the outer one's TimedOut passes through the inner block's handler."""
    token = object()
    if not seconds or not enforceable():
        yield token
        return
    remaining, _ = signal.getitimer(signal.ITIMER_REAL)
    if remaining and remaining <= seconds:  # an outer limit comes first: leave it in charge
        yield token
        return

    def alarm(signum, frame):
        raise TimedOut(token)

    previous = signal.signal(signal.SIGALRM, alarm)
    start = time.monotonic()
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield token
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if remaining:  # the outer alarm again, less the time spent here
            signal.setitimer(signal.ITIMER_REAL, max(remaining - (time.monotonic() - start), 1e-3))


class OverMemory(BaseException):
    """Raised by ``memory_limit`` in the code it interrupts once the process's resident memory
    passes the limit; ``limit`` is the token the context manager yielded."""

    def __init__(self, limit: object = None, resident: int = 0) -> None:
        super().__init__(limit)
        self.limit = limit
        self.resident = resident


def resident_bytes() -> int | None:
    """The process's resident memory now (Linux ``/proc/self/statm``), or None where unknown."""
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError, AttributeError):
        return None


def total_memory() -> int | None:
    """The machine's physical memory in bytes, or None where unknown."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (ValueError, OSError, AttributeError):
        return None


@contextmanager
def memory_limit(limit: int | None, every: float = 0.05) -> Iterator[object]:
    """Raise OverMemory(token) in the block once the resident memory exceeds ``limit`` bytes
    (None: no limit).  A watcher thread reads the resident size every ``every`` seconds and
    signals the main thread (SIGUSR1), which raises between bytecodes, like ``time_limit``'s
    alarm: one native call that allocates past the limit is stopped when it returns.  Off the
    main thread, or where the resident size cannot be read, the limit is not enforced."""
    token = object()
    if not limit or not enforceable() or resident_bytes() is None or \
            not hasattr(signal, "pthread_kill") or not hasattr(signal, "SIGUSR1"):
        yield token
        return
    done, seen = threading.Event(), [0]
    main = threading.main_thread().ident

    def over(signum, frame):
        if not done.is_set():
            raise OverMemory(token, seen[0])

    def watch():
        while not done.wait(every):
            now = resident_bytes() or 0
            if now > limit:
                seen[0] = now
                signal.pthread_kill(main, signal.SIGUSR1)
                return

    previous = signal.signal(signal.SIGUSR1, over)
    watcher = threading.Thread(target=watch, name="memory-limit", daemon=True)
    watcher.start()
    try:
        yield token
    finally:
        done.set()
        watcher.join()
        signal.signal(signal.SIGUSR1, previous)


def seconds_option(text: str, option: str = "--timeout") -> float:
    """A positive, finite number of seconds from the command line (UsageError otherwise)."""
    try:
        value = float(text)
    except (TypeError, ValueError):
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise UsageError(f"{option} {text}: must be a positive number of seconds")
    return value


# ------------------------------------------------------------------------- work estimates
# Where a setting declares no limits of its own (``work_caps``): a size may be at most this
# many times the largest value the setting itself uses at any budget (its paper sizes).
GENERIC_FACTOR = 2


def work_caps(setting, budget: str) -> dict[str, int]:
    """The largest value of each size that the setting's tiers finish in about ten minutes at
    ``budget``: the setting's own ``work_caps[budget]`` where it declares them (measured), else
    GENERIC_FACTOR times the largest value it uses itself."""
    own = getattr(setting, "work_caps", None)
    if own and budget in own:
        return dict(own[budget])
    sizes = getattr(setting, "sizes", None)
    if not isinstance(sizes, Mapping):
        return {}
    caps: dict[str, int] = {}
    for per_budget in sizes.values():
        if isinstance(per_budget, Mapping):
            for name, value in per_budget.items():
                if isinstance(value, int):
                    caps[name] = max(caps.get(name, 0), GENERIC_FACTOR * value)
    return caps


def refuse_work(setting, sizes: Mapping[str, int], dimension: int | None, budget: str,
                tiers: tuple[str, ...] = ()) -> None:
    """UsageError (exit 2, one line with a hint) for sizes the budget cannot finish in ten
    minutes; ``dimension`` is the d an explicit --sigma gives.  A cap named ``TIER:sigma``
    bounds that dimension where the tier runs (the symbolic tier computes exactly at the
    user's Sigma)."""
    caps = work_caps(setting, budget)
    paper = work_caps(setting, "paper")
    asked = dict(sizes)
    if dimension is not None:
        asked["d"] = dimension
        for tier in tiers:
            cap = caps.get(f"{tier}:sigma")
            if cap is not None and dimension > cap:
                raise UsageError(
                    f"--sigma is {dimension}x{dimension}: the {tier} tier computes exactly at it "
                    f"and would not finish in ten minutes (at most {cap}x{cap}); use a smaller "
                    f"Sigma, or leave the {tier} tier out (--tier)")
    for name, value in asked.items():
        cap = caps.get(name)
        if cap is not None and value > cap:
            where = "--sigma's dimension" if name == "d" and dimension is not None and \
                "d" not in sizes else f"--size {name}={value}"
            raise UsageError(
                f"{where} is too large: {name}={value} would not finish in ten minutes at "
                f"--budget {budget} (at most {name}={cap} here); use a smaller {name}"
                + (", or --budget paper on a GPU" if budget != "paper" and value <= paper.get(
                    name, 0) else ""))
