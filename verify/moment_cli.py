"""``icl-verify moment``: exact Wishart moments on the command line.

    icl-verify moment trace-power K [--identity] [--n N] [--json]   E tr W^K
    icl-verify moment power K [--identity] [--n N] [--json]         E[W^K]

W = sum_{i<=n} x_i x_i^T with x_i i.i.d. N(0, Sigma) (real; W, not W/n).  The result is printed as
one line that ``sympy.sympify`` reads back, in the symbols ``n``, ``p1``..``pK`` (p_j = tr Sigma^j)
and ``Sigma`` (only powers of Sigma occur, so a commutative symbol stands for it), or ``n`` and
``d`` with ``--identity`` (Sigma = I_d; E[W^K] is then that scalar times I_d).
"""
from __future__ import annotations

import json
import time

from .errors import UsageError

MAX_ORDER = 26  # E tr W^26 takes about half a minute on a 2-core machine; beyond is not interactive
MAX_ORDER_IDENTITY = 30

CONVENTION = "W = sum_{i<=n} x_i x_i^T, x_i ~ N(0, Sigma) i.i.d. (real Wishart; W, not W/n)"


def _order(text: str, identity: bool) -> int:
    try:
        k = int(text)
    except (TypeError, ValueError):
        raise UsageError(f"K must be a positive integer, got {text!r}") from None
    limit = MAX_ORDER_IDENTITY if identity else MAX_ORDER
    if k <= 0:
        raise UsageError(f"K must be a positive integer, got {k}")
    if k > limit:
        raise UsageError(f"K = {k} is too large: at most {limit}"
                         f"{' with --identity' if identity else ' (try --identity)'}")
    return k


def _sample_count(text: str | None) -> int | None:
    if text is None:
        return None
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"--n {text!r} is not an integer") from None
    if value <= 0:
        raise UsageError(f"--n {value} is impossible: n must be positive")
    return value


def _add_common(p) -> None:
    p.add_argument("K", help="the power (a positive integer)")
    p.add_argument("--identity", action="store_true", help="Sigma = I_d: a polynomial in n and d")
    p.add_argument("--n", dest="n_value", metavar="N",
                   help="a given integer n instead of symbolic n")
    p.add_argument("--json", action="store_true")


def register(sub) -> None:
    """Add ``moment`` with its subcommands ``trace-power`` and ``power`` to the CLI."""
    p = sub.add_parser("moment", help="exact Wishart moments E tr W^K and E[W^K]")
    inner = p.add_subparsers(dest="moment_command", parser_class=type(p))
    tp = inner.add_parser("trace-power", help="E tr W^K in n and p_j = tr Sigma^j (or n, d)")
    _add_common(tp)
    tp.set_defaults(func=cmd_moment, trace=True)
    pw = inner.add_parser("power", help="E[W^K] in n, p_j and Sigma (or n, d times I)")
    _add_common(pw)
    pw.set_defaults(func=cmd_moment, trace=False)
    p.set_defaults(func=_missing)


def _missing(args) -> int:
    raise UsageError("choose: moment trace-power K | moment power K")


def cmd_moment(args) -> int:
    from moments import wishart

    k = _order(args.K, args.identity)
    n_value = _sample_count(args.n_value)
    start = time.perf_counter()
    poly = wishart.moment(k, (), trace=args.trace, identity=args.identity)
    if n_value is not None:
        poly = poly.at_n(n_value)
    text = poly.to_string()
    seconds = time.perf_counter() - start
    if not args.json:
        print(text)
        return 0
    quantity = f"E tr W^{k}" if args.trace else f"E[W^{k}]"
    symbols = {"n": "number of samples" if n_value is None else f"given: n = {n_value}"}
    if args.identity:
        symbols["d"] = "dimension (Sigma = I_d)"
    else:
        symbols.update({f"p{j}": f"tr Sigma^{j}" for j in range(1, k + 1)})
        if not args.trace:
            symbols["Sigma"] = "the covariance (only its powers occur: a commutative symbol)"
    if not args.trace and args.identity:
        symbols["value"] = "the expression times the identity matrix I_d"
    print(json.dumps({"quantity": quantity, "k": k, "identity": args.identity, "n": n_value,
                      "convention": CONVENTION, "symbols": symbols, "expression": text,
                      "monomials": len(poly), "seconds": round(seconds, 4)}, indent=2))
    return 0
