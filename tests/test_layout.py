"""The layout's rules, read from the source: dependencies point one way (``moments``, ``models``,
``verify`` <- ``proofs_checks.kit`` <- paper packages), the engine imports no paper, no paper
package imports another, and no module is over ~800 lines."""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAPERS = sorted(p.name for p in (ROOT / "proofs_checks").iterdir()
                if p.is_dir() and (p / "__init__.py").exists() and p.name != "kit")
MAX_LINES = 800


def _sources(*parts: str) -> list[Path]:
    return sorted((ROOT.joinpath(*parts)).rglob("*.py"))


def _imports(path: Path) -> set[str]:
    """The absolute names of the modules ``path`` imports (relative imports resolved)."""
    package = ".".join(path.relative_to(ROOT).with_suffix("").parts[:-1])
    if path.name == "__init__.py":
        package = ".".join(path.relative_to(ROOT).parts[:-1])
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            out |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[:len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([base] if base else []))
            out.add(base)
            out |= {f"{base}.{a.name}" for a in node.names}
    return out


def test_the_engine_imports_no_paper_and_the_kit_imports_no_paper():
    for folder in ("verify", "moments", "models", "proofs_checks/kit"):
        for path in _sources(*folder.split("/")):
            bad = sorted(m for m in _imports(path) if any(
                m == f"proofs_checks.{p}" or m.startswith(f"proofs_checks.{p}.") for p in PAPERS))
            assert not bad, f"{path.relative_to(ROOT)} imports a paper: {bad}"


@pytest.mark.parametrize("paper", PAPERS)
def test_no_paper_package_imports_another(paper):
    others = [p for p in PAPERS if p != paper]
    for path in _sources("proofs_checks", paper):
        bad = sorted(m for m in _imports(path) if any(
            m == f"proofs_checks.{p}" or m.startswith(f"proofs_checks.{p}.") for p in others))
        assert not bad, f"{path.relative_to(ROOT)} imports another paper: {bad}"


def test_no_module_is_over_800_lines():
    long = {str(p.relative_to(ROOT)): n for folder in ("verify", "moments", "models",
                                                       "proofs_checks", "scripts", "bench")
            for p in _sources(folder) if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, long
