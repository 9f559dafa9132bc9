"""Lines of code per claim: its declaration (the ``Claim(...)`` call) and its checks (the tier
functions defined by the paper, and the paper's own functions they call directly; a kit check
counts only the callables the claim hands to the kit, and is named in the last column).  Prints
a table, the median over all claims and the median over the claims built on a kit check.

    python scripts/claim_lines.py [--paper KEY]...
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

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from verify import registry  # noqa: E402


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
    module = sys.modules[registry.paper_modules()[claim.paper]]
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
    args = ap.parse_args()
    papers = args.paper or registry.papers()
    rows = []
    for paper in papers:
        package = registry.paper_modules()[paper]
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
    return 0


def _median(what: str, rows: list) -> None:
    if rows:
        print(f"median over {len(rows)} claims{what}: declaration "
              f"{statistics.median(r[2] for r in rows):g}, checks "
              f"{statistics.median(r[3] for r in rows):g}, total "
              f"{statistics.median(r[4] for r in rows):g}")


if __name__ == "__main__":
    sys.exit(main())
