"""The JSON schemas shipped in verify/schema describe what check --json and mutate --json print."""
import configparser
import copy
import json
from fnmatch import fnmatch
from pathlib import Path

import jsonschema
import pytest

from verify.cli import main
from verify.schema import NAMES, load

ROOT = Path(__file__).resolve().parents[2]


def strict_json(text):
    """JSON as the standard defines it: NaN and Infinity are not JSON."""
    def reject(constant):
        raise ValueError(f"{constant} is not valid JSON")
    return json.loads(text, parse_constant=reject)


def run_json(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    assert code in (0, 1), err
    return strict_json(out)


@pytest.mark.parametrize("name", NAMES)
def test_schemas_are_valid_draft_2020_12(name):
    jsonschema.Draft202012Validator.check_schema(load(name))


def test_schemas_are_package_data():
    cfg = configparser.ConfigParser()
    cfg.read(ROOT / "setup.cfg")
    patterns = [p.strip() for p in cfg["options.package_data"]["verify.schema"].split(",")]
    files = sorted((ROOT / "verify" / "schema").glob("*.schema.json"))
    assert {f.name for f in files} == {f"{n}.schema.json" for n in NAMES}
    assert all(any(fnmatch(f.name, p) for p in patterns) for f in files)
    assert (ROOT / "verify" / "schema" / "__init__.py").exists()  # found by packages = find:


CHECK_CASES = {
    "verified": ["check", "ahn2023.lemma2", "--tier", "numeric", "--budget", "quick"],
    "refuted": ["check", "ahn2023.thm1", "--tier", "symbolic", "--budget", "quick", "--set",
                "A_iso=-1/((n-1)/n + (d+3)/n)"],
    # float64 overflow: undecided findings, NaN in the evidence (must print as valid JSON)
    "inconclusive": ["check", "ahn2023.thm1", "ahn2023.lemma2", "--tier", "numeric", "--budget",
                     "quick", "--sigma", "diag:1e200,1"],
}


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
@pytest.mark.parametrize("verdict", sorted(CHECK_CASES))
def test_check_json_follows_its_schema(capsys, verdict):
    out = run_json(capsys, *CHECK_CASES[verdict], "--json")
    jsonschema.validate(out, load("check"))
    assert {v["verdict"] for v in out} == {verdict}


def test_the_check_schema_rejects_drift(capsys):
    (v,) = run_json(capsys, *CHECK_CASES["refuted"], "--json")
    schema = load("check")
    for broken in ({**v, "verdict": "probably"}, {**v, "new_field": 1},
                   {k: x for k, x in v.items() if k != "seed"},
                   {**v, "counterexample": None},  # refuted needs its counterexample
                   {**v, "tiers": {"symbolic": {"status": "fail", "evidence": {},
                                                "seconds": 0.1}}}):  # fail needs its reason
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate([broken], schema)
    damaged = copy.deepcopy(v)
    damaged["tiers"]["quantum"] = damaged["tiers"]["symbolic"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate([damaged], schema)


def test_mutate_json_follows_its_schema(capsys):
    out = run_json(capsys, "mutate", "ahn2023.lemma2", "--formula", "prediction", "--tier",
                   "numeric", "--json")
    jsonschema.validate(out, load("mutate"))
    statuses = {m["status"] for f in out["claims"][0]["formulas"] for m in f["mutant_results"]}
    assert {"killed", "equivalent"} <= statuses
    broken = copy.deepcopy(out)
    broken["claims"][0]["formulas"][0]["mutant_results"][0]["status"] = "maybe"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, load("mutate"))
