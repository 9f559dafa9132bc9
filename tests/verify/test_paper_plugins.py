"""Papers as plugins: the entry-point group registers the built-in papers; a broken plugin is
named in one line and does not stop the others from loading."""
import json
import sys
import types

import pytest

from verify import registry
from verify.claim import Claim, TierResult
from verify.cli import main
from verify.definitions import Definition
from verify.formulas import FormulaSymbol, NamedFormula


def test_the_built_in_papers_register_through_the_entry_point_group():
    from importlib.metadata import entry_points

    names = {ep.name: ep.value for ep in entry_points(group=registry.GROUP)}
    assert {k: names[k] for k in registry.BUILT_IN} == registry.BUILT_IN
    assert list(registry.paper_modules())[:4] == list(registry.BUILT_IN)


@pytest.fixture
def plugins(monkeypatch):
    """Register extra plugins by module name for one test (caches cleared around it)."""
    caches = (registry._module, registry._paper_claims, registry.definitions, registry._skipped)

    def add(key, module_name, module=None):
        if module is not None:
            monkeypatch.setitem(sys.modules, module_name, module)
        monkeypatch.setitem(registry.paper_modules(), key, module_name)
        for cache in caches:
            cache.cache_clear()

    yield add
    for cache in caches:
        cache.cache_clear()


def _module(claims=None, definitions=()):
    m = types.ModuleType("plugin_under_test")
    if claims is not None:
        m.CLAIMS = claims
    m.DEFINITIONS = definitions
    return m


def _claim(paper):
    return Claim(id=f"{paper}.thm1", title="t", paper=paper, statement="s", assumptions=(),
                 formulas=(NamedFormula("f", "d", (FormulaSymbol("d"),)),),
                 checks={"symbolic": lambda ctx: TierResult("pass")})


@pytest.mark.parametrize("make,needle", [
    (lambda: None, "does not import: ModuleNotFoundError"),
    (lambda: _module(), "defines no CLAIMS"),
    (lambda: _module([_claim("other1999")]), "is declared in the module of broken2000"),
    (lambda: _module([_claim("broken2000")]), "'d', which the paper's definitions"),
    (lambda: _module(["not a claim"]), "CLAIMS holds str"),
])
def test_a_broken_plugin_is_one_line_and_the_others_load(plugins, capsys, make, needle):
    module = make()
    plugins("broken2000", "no_such_module_for_icl" if module is None else "plugin_under_test",
            module)
    assert main(["check", "--paper", "broken2000", "--tier", "symbolic"]) == 2
    err = capsys.readouterr().err
    assert needle in err and "broken2000" in err and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    assert main(["list", "--json"]) == 0  # every other paper still lists
    out, err = capsys.readouterr()
    ids = {r["id"] for r in json.loads(out)}
    assert "ahn2023.thm1" in ids and not any(i.startswith("broken2000") for i in ids)
    assert err.count("skipping paper plugin 'broken2000'") == 1


def test_a_working_outside_plugin_is_checked_like_a_built_in_paper(plugins, capsys):
    plugins("outside2001", "plugin_under_test",
            _module([_claim("outside2001")], (Definition("d", "the dimension", "Sec. 1"),)))
    assert main(["check", "outside2001.thm1", "--tier", "symbolic", "--json"]) == 0
    [v] = json.loads(capsys.readouterr().out)
    assert v["verdict"] == "verified"
