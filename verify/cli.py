"""The ``icl-verify`` command line: list, show, check (and the subcommands other modules add).

Exit status: 0 when every checked claim is verified or corrected, 1 when any is refuted or
inconclusive, 2 on bad input (one line on stderr, no traceback).
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Callable, Sequence

from .claim import BUDGETS, TIERS
from .errors import UsageError

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2
EXIT_TEXT = """exit status:
  0  every claim checked is verified or corrected (list, show: done)
  1  some claim is refuted or inconclusive
  2  bad input (one line on stderr: an unknown claim, option or formula; work a budget cannot
     finish; an option a claim cannot honour)"""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # argparse would print the whole usage; we print one line
        raise UsageError(message)


def _key_value(text: str, what: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name.strip() or not value.strip():
        raise UsageError(f"{what} {text!r}: expected NAME=VALUE")
    return name.strip(), value.strip()


def _size(text: str) -> tuple[str, int]:
    name, value = _key_value(text, "--size")
    try:
        number = int(value)
    except ValueError:
        raise UsageError(f"--size {text!r}: {value!r} is not an integer") from None
    if number <= 0:
        raise UsageError(f"--size {name}={number} is impossible: sizes must be positive")
    return name, number


def _tiers(text: str) -> list[str]:
    tiers = [t.strip() for t in text.split(",") if t.strip()]
    bad = [t for t in tiers if t not in TIERS]
    if bad or not tiers:
        raise UsageError(f"--tier {text!r}: tiers are {', '.join(TIERS)}")
    return tiers


def _add_list(sub) -> None:
    p = sub.add_parser("list", help="list the claims", description="List the claims, headed by "
                       "the citation of each paper.", epilog=EXIT_TEXT,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--paper", help="only this paper's claims")
    p.add_argument("--definitions", action="store_true",
                   help="the paper's definitions of its symbols instead (with --paper)")
    p.add_argument("--coverage", action="store_true",
                   help="the paper's coverage ledger instead (with --paper): every statement "
                        "of the paper that asserts something, with its claims or why none")
    p.add_argument("--verdicts", nargs="?", const="expected_verdicts.toml", default=None,
                   metavar="TOML", help="add the verdict recorded for each claim in TOML "
                   "(default: expected_verdicts.toml in the current directory)")
    p.add_argument("--json", action="store_true", help="print the list as JSON")
    p.set_defaults(func=cmd_list)


def _add_show(sub) -> None:
    p = sub.add_parser("show", help="a claim's statement, assumptions and named formulas",
                       epilog=EXIT_TEXT, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("id", help="the claim id, e.g. ahn2023.thm1")
    p.add_argument("--json", action="store_true", help="print the claim as JSON")
    p.set_defaults(func=cmd_show)


def add_selection(p) -> None:
    """The claim selection shared by check, report and mutate: IDs, --paper or --all."""
    p.add_argument("ids", nargs="*", metavar="ID", help="claim ids, e.g. ahn2023.thm1")
    p.add_argument("--paper", action="append", default=[], metavar="KEY",
                   help="every claim of this paper (repeatable)")
    p.add_argument("--all", action="store_true", help="every claim")


def add_run_options(p) -> None:
    p.add_argument("--tier", default=",".join(TIERS),
                   help="comma-separated: symbolic,numeric,train (default: all three)")
    p.add_argument("--budget", default="default",
                   help="quick | default | paper: sizes, samples and restarts (default: default)")
    p.add_argument("--device", default="auto",
                   help="auto | cpu | cuda: where training and Monte Carlo run (default: auto)")
    p.add_argument("--seed", default=0, type=_seed,
                   help="the seed every random draw derives from (default: 0)")
    p.add_argument("--size", action="append", default=[], metavar="NAME=INT",
                   help="override a size of the setting (n, d, layers, ...)")
    p.add_argument("--sigma", help="covariance: identity, diag:1,1/2, rotated:1,1/2 or "
                   "[[2,1],[1,2]] (a claim whose checks fix it refuses it)")
    p.add_argument("--timeout", type=_timeout, default=None, metavar="SECONDS",
                   help="stop a claim still running after this many seconds: it is reported "
                        "inconclusive (timed out), never a verdict it did not reach")
    p.add_argument("--jobs", type=_jobs, default=1, metavar="N",
                   help="run the claims (for mutate: the mutants) on N processes (default 1); "
                        "the results are those of --jobs 1, in the same order")
    p.add_argument("--scheduler", default=None, metavar="ADDRESS",
                   help="run them on the Dask cluster whose scheduler is at ADDRESS "
                        "(tcp://host:port; needs pip install -e '.[dask]')")


def _jobs(text: str) -> int:
    from .parallel import jobs_option

    return jobs_option(text)


def executor_from(args, label: str):
    """Where the tasks of a command run: --jobs processes, or the --scheduler's cluster."""
    from .parallel import Executor

    if args.scheduler is not None and not args.scheduler.strip():
        raise UsageError("--scheduler '': give the scheduler's address, e.g. tcp://127.0.0.1:8786")
    show = not getattr(args, "json", False) and sys.stderr.isatty()
    return Executor(args.jobs, args.scheduler, show, label)


def _timeout(text: str) -> float:
    from .limits import seconds_option

    return seconds_option(text, "--timeout")


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise UsageError(f"--seed {text!r} is not an integer") from None
    if value < 0:
        raise UsageError("--seed must be non-negative")
    return value


def _add_check(sub) -> None:
    p = sub.add_parser("check", help="check claims and print their verdicts", epilog=EXIT_TEXT,
                       formatter_class=argparse.RawDescriptionHelpFormatter)
    add_selection(p)
    add_run_options(p)
    p.add_argument("--json", action="store_true",
                   help="print every verdict with all its evidence as JSON on stdout")
    p.add_argument("-q", "--quiet", action="store_true",
                   help="print the table only (no evidence lines under each claim)")
    p.add_argument("--set", action="append", default=[], metavar="NAME=EXPR",
                   help="replace a named formula by a sympy expression (a conjecture or a typo)")
    p.set_defaults(func=cmd_check)


def select_claims(args) -> list:
    from . import registry

    chosen = []
    if args.all:
        chosen = registry.all_claims()
    for paper in args.paper:
        chosen += registry.by_paper(paper)
    for cid in args.ids:
        chosen.append(registry.find(cid))
    if not chosen:
        raise UsageError("name claims to check: IDs, --paper KEY or --all")
    seen, out = set(), []
    for c in chosen:
        if c.id not in seen:
            seen.add(c.id)
            out.append(c)
    return out


def run_options(args) -> dict:
    """Validated tier/budget/device/size/sigma options as keyword arguments for check_claim."""
    from models.device import DeviceUnavailable, resolve_device
    from .sigma import parse_sigma

    tiers = _tiers(args.tier)
    if args.budget not in BUDGETS:
        raise UsageError(f"--budget {args.budget!r}: budgets are {', '.join(BUDGETS)}")
    try:
        resolve_device(args.device)
    except DeviceUnavailable as exc:
        raise UsageError(str(exc)) from None
    sizes = dict(_size(s) for s in args.size)
    return {"tiers": tiers, "budget": args.budget, "device": args.device, "seed": args.seed,
            "sizes": sizes, "sigma": parse_sigma(args.sigma), "timeout": args.timeout}


def cmd_list(args) -> int:
    from . import registry

    if args.definitions:
        if not args.paper:
            raise UsageError("list --definitions needs --paper KEY")
        registry.by_paper(args.paper)  # loading the claims checks they are bound
        defs = registry.definitions(args.paper).all()
        if args.json:
            print(json.dumps([d.as_dict() for d in defs], indent=2))
        else:
            from .output import definitions_table

            print(definitions_table(defs))
        return EXIT_OK
    claims = registry.by_paper(args.paper) if args.paper else registry.all_claims()
    verdicts = None
    if args.verdicts is not None:
        from pathlib import Path

        from .expected import read_expected

        path = Path(args.verdicts)
        if not path.is_file():
            raise UsageError(f"--verdicts {args.verdicts}: no such file")
        verdicts = read_expected(path)
    if args.coverage:
        from .coverage import coverage_lines, load

        if not args.paper:
            raise UsageError("list --coverage needs --paper KEY")
        cov = load(args.paper)
        if args.json:
            print(json.dumps({"paper": cov.paper, "statements": len(cov.items),
                              "checkable": cov.checkable, "checked": cov.checked,
                              "items": [i.as_dict() for i in cov.items]}, indent=2))
        else:
            print("\n".join(coverage_lines(cov, verdicts)))
        return EXIT_OK
    if args.json:
        rows = [c.summary() for c in claims]
        if verdicts is not None:
            rows = [{**r, "expected_verdict": verdicts.get(r["id"])} for r in rows]
        print(json.dumps(rows, indent=2))
        return EXIT_OK
    from .output import list_table

    papers = list(dict.fromkeys(c.paper for c in claims))
    print(list_table(claims, {p: registry.reference(p) for p in papers}, verdicts))
    return EXIT_OK


def cmd_show(args) -> int:
    from . import registry

    claim = registry.find(args.id)
    defined = registry.definitions(claim.paper).symbols_of(claim)
    if args.json:
        print(json.dumps({**claim.describe(), "definitions": [d.as_dict() for d in defined]},
                         indent=2))
        return EXIT_OK
    from .output import show_text

    print(show_text(claim, defined))
    return EXIT_OK


def formula_overrides(texts: Sequence[str], claims: list) -> dict[str, dict[str, str]]:
    """``--set NAME=EXPR`` per claim id (the claims that have a formula NAME), each parsed
    strictly before any work (an unknown name or an ill-typed text is bad input)."""
    overrides = dict(_key_value(s, "--set") for s in texts)
    for name, text in overrides.items():
        if not any(name in {f.name for f in c.formulas} for c in claims):
            known = sorted({f.name for c in claims for f in c.formulas})
            raise UsageError(f"--set {name}: no selected claim has a formula {name!r} "
                             f"(formulas: {', '.join(known) or 'none'})")
        for c in claims:  # an ill-typed --set is bad input here (shape errors sympy lets by)
            if name in {f.name for f in c.formulas}:
                c.formula(name).parse(text, strict=True)
    return {c.id: {k: v for k, v in overrides.items() if k in {f.name for f in c.formulas}}
            for c in claims}


def verdict_summary(verdicts: list) -> str:
    """Counts per verdict, and the claims that are not verified."""
    counts: dict[str, int] = {}
    for v in verdicts:
        counts[v.verdict] = counts.get(v.verdict, 0) + 1
    line = ", ".join(f"{n} {name}" for name, n in counts.items())
    others = [f"{v.claim} ({v.verdict})" for v in verdicts if v.verdict != "verified"]
    return f"{len(verdicts)} claim{'' if len(verdicts) == 1 else 's'}: {line}" + (
        f"; not verified: {', '.join(others)}" if others else "")


def cmd_check(args) -> int:
    from .output import check_table
    from .parallel import check_all
    from .runner import validate

    claims = select_claims(args)
    options = run_options(args)
    mine = formula_overrides(args.set, claims)
    for claim in claims:  # every claim's sizes before any work
        validate(claim, options["sizes"], options["sigma"], options["budget"], options["tiers"])
    executor = executor_from(args, "claims")
    # training progress bars only where one process runs the claims in order
    local = executor.jobs == 1 and executor.scheduler is None
    verdicts = check_all(claims, {**options, "progress": executor.progress and local}, mine,
                         executor)
    if args.json:
        print(json.dumps([v.as_dict() for v in verdicts], indent=2))
    else:
        print(check_table(verdicts, quiet=args.quiet))
    return EXIT_OK if all(v.passed for v in verdicts) else EXIT_FAILED


# Subcommands contributed by other modules register themselves through this list.
COMMANDS: list[Callable] = [_add_list, _add_show, _add_check]


def _extra_commands() -> list[Callable]:
    out = []
    for module, name in (("verify.moment_cli", "register"), ("verify.report", "register"),
                         ("verify.mutate", "register")):
        try:
            mod = __import__(module, fromlist=[name])
        except ModuleNotFoundError as exc:
            if exc.name != module:
                raise
            continue
        out.append(getattr(mod, name))
    return out


def build_parser() -> argparse.ArgumentParser:
    from . import __version__

    parser = _Parser(prog="icl-verify",
                     description="Check published claims about in-context learning.",
                     epilog=EXIT_TEXT, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--version", action="version", version=f"icl-verify {__version__}")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)
    for add in COMMANDS + _extra_commands():
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from models.device import DeviceUnavailable

    parser = build_parser()
    try:
        args = parser.parse_args(argv)
        args.argv = list(sys.argv[1:] if argv is None else argv)  # a report records it
        if not getattr(args, "func", None):
            raise UsageError("choose a command: " + ", ".join(sorted(
                parser._subparsers._group_actions[0].choices)))  # noqa: SLF001
        return args.func(args)
    except (UsageError, DeviceUnavailable) as exc:
        print(f"icl-verify: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("icl-verify: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return EXIT_OK


def entry_point() -> None:
    sys.exit(main())
