"""One module per paper: its setting, its claims and their checks.

``PAPER_MODULES`` maps each paper key (the prefix of its claim ids, ``../shared/papers/README.md``)
to the module that declares ``CLAIMS``.
"""

PAPER_MODULES = {
    "ahn2023": "proofs_checks.ahn2023",
    "gatmiry2024": "proofs_checks.gatmiry2024",
    "xie2025": "proofs_checks.xie2025",
    "yang2024": "proofs_checks.yang2024",
}
