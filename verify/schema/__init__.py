"""JSON schemas of the command line's ``--json`` outputs, shipped with the package.

``load("check")`` is the schema of ``icl-verify check --json``; ``load("mutate")`` of
``icl-verify mutate --json``.  Validate with any JSON Schema (draft 2020-12) validator, e.g.
``jsonschema.validate(output, load("check"))``.
"""
from __future__ import annotations

import json
from functools import lru_cache
from importlib import resources

NAMES = ("check", "mutate")


@lru_cache(maxsize=None)
def load(name: str) -> dict:
    if name not in NAMES:
        raise ValueError(f"no schema {name!r} (schemas: {', '.join(NAMES)})")
    text = resources.files(__name__).joinpath(f"{name}.schema.json").read_text(encoding="utf-8")
    return json.loads(text)
