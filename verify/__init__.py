"""icl-verify: the claim registry, tiers, verdicts, CLI and reports.

``proofs_checks`` imports only the data model here (``claim``, ``formulas``, ``evidence``,
``errors``); the registry, runner and CLI import ``proofs_checks``.
"""

__version__ = "0.1.0"
