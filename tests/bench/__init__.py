"""Tests of the scripts under bench/ (loaded by path: bench/ is not a package)."""
import importlib.util
import pathlib


def bench_module(name: str):
    """The module bench/NAME.py."""
    path = pathlib.Path(__file__).resolve().parents[2] / "bench" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"bench_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module
