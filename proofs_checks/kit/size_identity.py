"""The kit's identity in a symbolic size: "lhs == rhs for every value of the inputs and every
size" (d, C, ...).

A claim gives its comparisons twice over one set of formulas:

- ``letters(F)``: ``(finding, lhs, rhs)`` as moment-kernel expressions (``moments.tensor``
  letters over index spaces named by the sizes), where every formula they read has such a form
  (the sizes enter polynomially); the two sides' canonical polynomials (``moments.wick``) are
  equal iff the identity holds for every size and every input: a proof, not a sample.  A formula
  without a kernel form (a ones block, an inverse) raises ``ValueError`` or
  ``NotImplementedError``, and the comparisons fall back to ...
- ``at_sizes``: a ``kit.pointwise`` spec with the same comparisons at exact points (concrete
  sizes, every input entry a symbol: exact at those sizes, which the evidence says) and at
  float64 points (the numeric tier, within ``pointwise``'s rounding allowance; non-finite numbers
  decide nothing).

A finding ``letters`` decides is not compared again at the exact points; the others (a proof's
intermediate display at one size) are.  The formulas are read through the context.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Callable, Mapping

from moments.wick import canonical
from verify.claim import Check, Context, TierResult
from verify.evidence import Finding, combine, step

from .pointwise import Pointwise, exact_compare, float_compare, merge_results


@dataclass(frozen=True)
class SizeIdentity:
    """See the module docstring; ``counterexample(ctx, F, finding)`` a rational instance where a
    symbolic comparison fails (the canonical difference alone names no point)."""

    letters: Callable[[Mapping], list]
    at_sizes: Pointwise
    counterexample: Callable[[Context, Mapping, str], dict] | None = None


def size_identity(spec: SizeIdentity) -> dict[str, Check]:
    """The symbolic tier (every size where the kernel reads the formulas) and the numeric one."""
    return {"symbolic": lambda ctx: symbolic(spec, ctx),
            "numeric": lambda ctx: float_compare(spec.at_sizes, ctx, ctx.formulas)}


def symbolic(spec: SizeIdentity, ctx: Context) -> TierResult:
    F = ctx.formulas
    try:
        comparisons, why = spec.letters(F), ""
    except (ValueError, NotImplementedError) as exc:  # no kernel form: the exact points decide
        comparisons, why = [], str(exc)
    findings, steps = [], []
    for name, lhs, rhs in comparisons:
        try:
            diff = canonical(lhs - rhs).simplify()
        except (ValueError, NotImplementedError) as exc:  # this one: at the exact points
            why = f"{why}; {name}: {exc}" if why else f"{name}: {exc}"
            continue
        ok = diff.is_zero()
        ce = None if ok or spec.counterexample is None else spec.counterexample(ctx, F, name)
        findings.append(Finding(name, ok, {"difference": str(diff),
                                           "difference_latex": diff.latex() or "0",
                                           "exact_in": "every size (symbolic)"},
                                ce if ce is not None or ok else {"difference": str(diff)},
                                "" if ok else f"{name}: the two sides differ for some size "
                                              f"and input ({spec.at_sizes.what})",
                                summary="exact for every size (canonical forms)"))
        steps.append(step(name.replace("_", " "), r"\text{lhs} - \text{rhs} = "
                          + (diff.latex() or "0"), "Canonical polynomials in the kernel's "
                          "letters, every size symbolic."))
    done = {f.name for f in findings}
    rest = replace(spec.at_sizes, sides=lambda p, F_: [
        c for c in spec.at_sizes.sides(p, F_) if c[0] not in done])
    out = merge_results(combine(findings, steps=steps), exact_compare(rest, ctx, F))
    out.evidence["for_every_size"] = sorted(done)  # the others: at the exact points only
    if why:
        out.evidence["no_kernel_form"] = why
    return out
