"""Search the minimal correction of every refuted claim's formulas and write what is found to
its paper's derived_corrections.json, beside the paper's module (see verify/corrections.py):

    python scripts/derive_corrections.py [CLAIM_ID ...]

Without ids: every claim with a documented correction.  Prints per claim the change found, or
why none (a bound, a formula the derivation does not refute, no candidate in the
neighbourhood), and the seconds spent.
"""
from __future__ import annotations

import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from verify.corrections import search, write  # noqa: E402
from verify.registry import all_claims, find  # noqa: E402


def main(ids: list[str]) -> int:
    claims = [find(i) for i in ids] if ids else [c for c in all_claims() if c.correction]
    found = {}
    for claim in claims:
        start = time.perf_counter()
        d = search(claim)
        took = time.perf_counter() - start
        if d is None:
            print(f"{claim.id:<24} documented ({took:.1f} s)", flush=True)
            continue
        found[claim.id] = d
        print(f"{claim.id:<24} derived: {d.description()} (tried {d.tried}; {took:.1f} s)",
              flush=True)
    write(found)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
