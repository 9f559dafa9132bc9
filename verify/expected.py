"""The verdicts a user records for the claims (``expected_verdicts.toml``): read by the pytest
plugin (a changed verdict fails) and by ``icl-verify list --verdicts``."""
from __future__ import annotations

from pathlib import Path

VERDICT_NAMES = ("verified", "corrected", "refuted", "inconclusive")
PROOF_NAMES = ("supported", "gap", "not checked")


def read_expected(path: Path, part: str = "verdict") -> dict[str, str]:
    """claim id -> expected verdict (``part="proof"``: the proof's expected status, for the
    claims that give one), from the user's TOML file (validated against the registry)."""
    import tomllib

    from verify import registry
    from verify.errors import UsageError

    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path}: not valid TOML ({exc})") from None
    out: dict[str, str] = {}

    def walk(table: dict, prefix: str) -> None:
        for key, value in table.items():
            cid = f"{prefix}{key}"
            if isinstance(value, dict) and "verdict" not in value:
                walk(value, cid + ".")
                continue
            verdict = value.get("verdict") if isinstance(value, dict) else value
            if verdict not in VERDICT_NAMES:
                raise UsageError(f"{path}: {cid} = {verdict!r} is not a verdict "
                                 f"({', '.join(VERDICT_NAMES)})")
            proof = value.get("proof") if isinstance(value, dict) else None
            if proof is not None and proof not in PROOF_NAMES:
                raise UsageError(f"{path}: {cid}'s proof = {proof!r} is not a proof status "
                                 f"({', '.join(PROOF_NAMES)})")
            if part == "verdict":
                out[cid] = verdict
            elif proof is not None:
                out[cid] = proof

    walk(data, "")
    known = {c.id for c in registry.all_claims()}
    unknown = sorted(set(out) - known)
    if unknown:
        raise UsageError(f"{path}: unknown claim {unknown[0]!r} (icl-verify list shows the "
                         f"{len(known)} claims)")
    return out
