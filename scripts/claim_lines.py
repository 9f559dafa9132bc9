"""Lines of code per claim: its declaration (the ``Claim(...)`` call) and its checks (the tier
functions defined by the paper, and the paper's own functions they call directly; a kit check
counts only the callables the claim hands to the kit, and is named in the last column).  Prints
a table, the median over all claims and the median over the claims built on a kit check.
``--against TABLE`` compares with a table this script printed at another revision: the claims in
both, their medians and sums then and now.

    python scripts/claim_lines.py [--paper KEY]... [--against TABLE]

The table of the revision before the kit (dd2886f, 73 claims) is
``scripts/data/claim_lines_dd2886f.txt``; to print one for another revision REV:

    git worktree add /tmp/rev REV && cd /tmp/rev && PYTHONPATH=. python /path/to/claim_lines.py
"""
from __future__ import annotations

import argparse
import ast
import dataclasses
import inspect
import statistics
import sys
import types
from pathlib import Path

sys.path.append(str(Path(__file__).resolve().parents[1]))  # PYTHONPATH (another revision) first

from verify import registry  # noqa: E402


def _paper_modules() -> dict:
    """{paper key: module}: the registry's, or (a revision before papers were plugins) the
    package's ``PAPER_MODULES``."""
    if hasattr(registry, "paper_modules"):
        return registry.paper_modules()
    from proofs_checks import PAPER_MODULES
    return dict(PAPER_MODULES)


def _lines(obj) -> int:
    try:
        return len(inspect.getsourcelines(obj)[0])
    except (OSError, TypeError):
        return 0


KIT = "proofs_checks.kit"


def _held(value, package: str, seen: set, depth: int, kits: set) -> int:
    """Lines of the claim's callables inside a kit spec (a dataclass, maybe in a tuple); the
    kit spec classes met are added to ``kits``."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        if type(value).__module__.startswith(KIT):
            kits.add(type(value).__name__)
        return sum(_held(getattr(value, f.name), package, seen, depth, kits)
                   for f in dataclasses.fields(value))
    if isinstance(value, (tuple, list)):
        return sum(_held(v, package, seen, depth, kits) for v in value)
    return _own(value, package, seen, depth, kits) if callable(value) else 0


def _own(fn, package: str, seen: set, depth: int = 0, kits: set | None = None) -> int:
    """Source lines of ``fn`` and of the paper's functions it names (one level deep), or of the
    callables a kit check closes over."""
    kits = set() if kits is None else kits
    fn = inspect.unwrap(fn)
    if id(fn) in seen or not callable(fn):
        return 0
    seen.add(id(fn))
    module = getattr(fn, "__module__", "") or ""
    total = 0
    if module.startswith(package) and getattr(fn, "__name__", "") == "<lambda>" and \
            isinstance(fn, types.FunctionType):
        total += _lambda_lines(fn)  # a lambda handed to a kit spec: its own lines count
    if module.startswith(package) and not getattr(fn, "__name__", "") == "<lambda>":
        total += _lines(fn)
        if depth == 0 and isinstance(fn, types.FunctionType):
            for name in fn.__code__.co_names:
                g = fn.__globals__.get(name)
                if isinstance(g, types.FunctionType) and (g.__module__ or "").startswith(package):
                    total += _own(g, package, seen, depth + 1, kits)
        return total
    for cell in (getattr(fn, "__closure__", None) or ()):  # a kit check or a lambda
        value = cell.cell_contents
        total += _held(value, package, seen, depth, kits)
    if getattr(fn, "__name__", "") == "<lambda>" and isinstance(fn, types.FunctionType):
        for name in fn.__code__.co_names:
            g = fn.__globals__.get(name)
            if isinstance(g, types.FunctionType):
                total += _own(g, package, seen, depth, kits)
    return total


def _lambda_lines(fn) -> int:
    """The source lines a lambda spans (its body's first to last line)."""
    lines = [ln for _, _, ln in fn.__code__.co_lines() if ln is not None]
    return max(lines) - min(lines) + 1 if lines else 1


def _declaration(claim) -> tuple[str, int]:
    """The file and line count of the ``Claim(id=...)`` call that declares ``claim``."""
    module = sys.modules[_paper_modules()[claim.paper]]
    files = [Path(module.__file__)]
    if Path(module.__file__).name == "__init__.py":
        files += sorted(Path(module.__file__).parent.glob("*.py"))
    for path in files:
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if (isinstance(node, ast.Call) and getattr(node.func, "id", "") == "Claim"
                    and any(k.arg == "id" and isinstance(k.value, ast.Constant)
                            and k.value.value == claim.id for k in node.keywords)):
                return path.name, node.end_lineno - node.lineno + 1
    return "?", 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--paper", action="append", default=[])
    ap.add_argument("--against", metavar="TABLE",
                    help="a table this script printed at another revision")
    args = ap.parse_args()
    papers = args.paper or registry.papers()
    rows = []
    for paper in papers:
        package = _paper_modules()[paper]
        for claim in registry.by_paper(paper):
            where, decl = _declaration(claim)
            seen: set = set()
            kits: set = set()
            checks = sum(_own(fn, package, seen, 0, kits) for fn in claim.checks.values())
            rows.append((claim.id, where, decl, checks, decl + checks, ",".join(sorted(kits))))
    width = max(len(r[0]) for r in rows)
    print(f"{'claim':{width}}  {'file':24}  declaration  checks  total  kit check")
    for cid, where, decl, checks, total, kit in rows:
        print(f"{cid:{width}}  {where:24}  {decl:11d}  {checks:6d}  {total:5d}  {kit or '-'}")
    _median("", rows)
    _median(" built on a kit check", [r for r in rows if r[5]])
    if args.against:
        _against(Path(args.against), rows)
    return 0


def _read_table(path: Path) -> dict:
    """{claim id: (declaration, checks, total)} of a table this script printed."""
    out = {}
    for line in path.read_text().splitlines():
        f = line.split()
        if len(f) >= 5 and "." in f[0] and all(x.isdigit() for x in f[2:5]):
            out[f[0]] = tuple(int(x) for x in f[2:5])
    return out


def _against(path: Path, rows: list) -> None:
    """The claims of both tables: median and sum of each column then and now."""
    then = _read_table(path)
    now = {r[0]: (r[2], r[3], r[4]) for r in rows}
    both = [c for c in then if c in now]
    print(f"\nagainst {path.name}: {len(both)} claims in both ({len(then)} then, {len(now)} now)")
    for i, col in enumerate(("declaration", "checks", "total")):
        a, b = [then[c][i] for c in both], [now[c][i] for c in both]
        if a:
            print(f"  {col:11}  median {statistics.median(a):g} -> {statistics.median(b):g}, "
                  f"sum {sum(a)} -> {sum(b)} ({100 * (sum(b) - sum(a)) / sum(a):+.0f}%)")


def _median(what: str, rows: list) -> None:
    if rows:
        print(f"median over {len(rows)} claims{what}: declaration "
              f"{statistics.median(r[2] for r in rows):g}, checks "
              f"{statistics.median(r[3] for r in rows):g}, total "
              f"{statistics.median(r[4] for r in rows):g}")


if __name__ == "__main__":
    sys.exit(main())
