"""icl-verify: the claim registry, tiers, verdicts, CLI and reports.

Paper packages import only the data model here (``claim``, ``definitions``, ``formulas``,
``evidence``, ``errors``); the registry finds them through the entry-point group
``icl_verify.papers`` and imports them by name, so no module here imports a paper (the CLI
reads ``--sigma`` with the kit's ``linear_icl.parse_sigma``).
"""

__version__ = "0.1.0"
