"""``--sigma``: the covariance a user asks for, read as data (no recursion, no eval), with its
positive definiteness decided exactly (rational elimination).  Settings turn a ``SigmaSpec``
into exact and float instances (``proofs_checks.kit.linear_icl.make_instance``)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction

import sympy

from .errors import UsageError


@dataclass(frozen=True)
class SigmaSpec:
    """How Sigma is chosen: ``random`` (rotated, rational spectrum), ``identity``, ``diag``
    (given eigenvalues, U = I), ``rotated`` (given eigenvalues, random rational rotation) or
    ``matrix`` (given entries)."""

    kind: str = "random"
    values: tuple = ()

    def describe(self) -> str:
        if self.kind in ("random", "identity"):
            return self.kind
        return f"{self.kind}:{','.join(str(v) for v in self.values)}"


# a tier's evidence["sigma_scope"]: its statement was checked for every covariance (symbolic in
# Sigma, or an identity in every input), so --sigma needs no reading to be covered
EVERY_SIGMA = "every covariance"


class SigmaReads(SigmaSpec):
    """A tier's view of ``--sigma`` that records whether the tier used it (``read``): a tier
    that never reads the covariance the user asked for checked its own, and cannot decide the
    claim at the asked one (the runner skips its result).  ``is None`` tests do not read, and
    neither does looking at ``kind`` alone: a tier that branches on the kind and then checks a
    covariance of its own has not checked the asked one; building an instance reads its
    ``values`` or ``describe()``."""

    def __init__(self, spec: SigmaSpec) -> None:
        object.__setattr__(self, "_spec", spec)
        object.__setattr__(self, "read", False)

    def __getattribute__(self, name: str):
        if name in ("values", "describe"):
            object.__setattr__(self, "read", True)
        if name in ("kind", "values", "describe"):
            return getattr(object.__getattribute__(self, "_spec"), name)
        return object.__getattribute__(self, name)

    def __eq__(self, other) -> bool:
        return object.__getattribute__(self, "_spec") == other

    def __hash__(self) -> int:
        return hash(object.__getattribute__(self, "_spec"))

    def __repr__(self) -> str:
        return f"SigmaReads({object.__getattribute__(self, '_spec')!r})"


SIGMA_MAX_TEXT = 100_000  # characters of --sigma
SIGMA_MAX_DIM = 64  # rows of --sigma (the work estimate may allow fewer)
# a number: decimal or scientific (exponent of at most 3 digits), optionally over an integer
_NUMBER = re.compile(r"^[+-]?(\d{1,400}(\.\d{0,400})?|\.\d{1,400})([eE][+-]?\d{1,3})?"
                     r"(/\d{1,400})?$")


def _entry(text: str, raw: str) -> Fraction:
    """One number of --sigma, exactly; bounded so that no entry can take long to build."""
    t = text.strip()
    if not _NUMBER.match(t):
        raise UsageError(f"--sigma {_cut(raw)!r}: {_cut(t, 40)!r} is not a number such as 2, "
                         f"1/2, 0.25 or 1e-6")
    num, _, den = t.partition("/")
    try:
        value = Fraction(num) / Fraction(den) if den else Fraction(num)
    except ZeroDivisionError:
        raise UsageError(f"--sigma {_cut(raw)!r}: {t!r} divides by zero") from None
    return value


def _cut(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else text[:limit] + "..."


def parse_sigma(text: str | None) -> SigmaSpec | None:
    """Read ``--sigma``: ``identity``, ``diag:1,1/2,1/4``, ``rotated:1,1/2`` or ``[[2,1],[1,2]]``.

    The text is read without recursion (a matrix is two levels of brackets, nothing deeper),
    with its length, its size and every entry bounded, so that no input hangs or overflows the
    stack; anything else is a one-line UsageError."""
    if text is None:
        return None
    if len(text) > SIGMA_MAX_TEXT:
        raise UsageError(f"--sigma is {len(text)} characters long; at most {SIGMA_MAX_TEXT}")
    t = text.strip()
    if t in ("identity", "random"):
        return SigmaSpec(t)
    if t.startswith("diag:") or t.startswith("rotated:"):
        kind, _, body = t.partition(":")
        vals = tuple(_entry(v, text) for v in body.split(",") if v.strip())
        if not vals:
            raise UsageError(f"--sigma {_cut(text)!r} is not identity, diag:..., rotated:... or "
                             f"a matrix such as [[2,1],[1,2]] (no eigenvalues)")
        _dim_cap(len(vals), text)
        if any(v <= 0 for v in vals):
            raise UsageError(f"--sigma {_cut(text)!r}: eigenvalues must be positive "
                             f"(a covariance must be positive definite)")
        return SigmaSpec(kind, vals)
    mat = _matrix_rows(t, text)
    d = len(mat)
    if d == 0 or any(len(r) != d for r in mat):
        raise UsageError(f"--sigma {_cut(text)!r} is not a square matrix")
    _dim_cap(d, text)
    if any(mat[i][j] != mat[j][i] for i in range(d) for j in range(d)):
        raise UsageError(f"--sigma {_cut(text)!r} is not symmetric")
    m = sympy.Matrix(d, d, lambda i, j: sympy.Rational(mat[i][j].numerator, mat[i][j].denominator))
    if not _is_positive_definite(m):
        raise UsageError(f"--sigma {_cut(text)!r} is not positive definite")
    return SigmaSpec("matrix", tuple(tuple(r) for r in mat))


def _dim_cap(d: int, text: str) -> None:
    if d > SIGMA_MAX_DIM:
        raise UsageError(f"--sigma {_cut(text)!r} is {d}x{d}; at most {SIGMA_MAX_DIM}x"
                         f"{SIGMA_MAX_DIM} (and the work estimate may allow fewer)")


def _matrix_rows(t: str, raw: str) -> list[list[Fraction]]:
    """``[[a, b], [c, d]]`` as rows of exact numbers: exactly two levels of brackets."""
    bad = UsageError(f"--sigma {_cut(raw)!r} is not identity, diag:..., rotated:... or a matrix "
                     f"such as [[2,1],[1,2]]")
    body = re.sub(r"\s+", "", t)
    if not (body.startswith("[[") and body.endswith("]]")):
        raise bad
    rows = body[2:-2].split("],[")
    if any("[" in r or "]" in r for r in rows):
        raise bad
    return [[_entry(x, raw) for x in r.split(",")] for r in rows]


def _is_positive_definite(m: sympy.Matrix) -> bool:
    """Exactly, by the pivots of Gaussian elimination (all positive iff positive definite for a
    symmetric matrix), in Fractions: O(d^3), unlike d determinants."""
    d = m.shape[0]
    a = [[Fraction(int(x.p), int(x.q)) for x in m.row(i)] for i in range(d)]
    for k in range(d):
        if a[k][k] <= 0:
            return False
        for i in range(k + 1, d):
            f = a[i][k] / a[k][k]
            if f:
                for j in range(k, d):
                    a[i][j] -= f * a[k][j]
    return True
