"""icl-verify: the claim registry, tiers, verdicts, CLI and reports.

Paper packages import only the data model here (``claim``, ``definitions``, ``formulas``,
``evidence``, ``errors``); the registry finds them through the entry-point group
``icl_verify.papers`` and imports them by name, so no module here imports ``proofs_checks``.
"""

__version__ = "0.1.0"
