"""How a report typesets evidence values: numbers, matrices, sympy-printed expressions (read by
the whitelisting formula parser, never sympified), prose with expressions inside, and values
too long for their place (into the appendix).  Used by ``verify.report``."""
from __future__ import annotations

import keyword
import re
from typing import Any, Callable

import sympy

from .latex import (Latex, breakable, escape, is_matrix, is_scalar, matrix, number, sympy_latex,
                    tex_width)

_LONG_TEXT = None  # evidence strings are never cut: they wrap (breakable)
_SKIP_KEYS = {"curve", "distance_curve"}

def _label(claim_id: str) -> str:
    # no "_" in labels: the template escapes it to "\_", which \hyperref rejects (thm3_4)
    return "claim:" + claim_id.replace(".", ":").replace("_", "-")



# sympy's and the keys' ASCII for infinity and relations: "C -> oo", "as_C_to_oo", "C>=1"
_ASCII_MATH = re.compile(r"(?<![A-Za-z\\])oo(?![A-Za-z])|->|<=|>=")
_SYMBOL = {"oo": r"$\infty$", "->": r"$\to$", "<=": r"$\le$", ">=": r"$\ge$"}


def _with_math_symbols(plain: Callable[..., Latex]) -> Callable[..., Latex]:
    """``plain`` (escape or breakable) with ASCII infinity, arrows and relations ("C -> oo",
    "as_C_to_oo", "C>=1") set as symbols."""
    def render(text: str, *args) -> Latex:
        out, last = [], 0
        for m in _ASCII_MATH.finditer(text):
            out += [plain(text[last:m.start()], *args), _SYMBOL[m.group(0)]]
            last = m.end()
        return Latex("".join(out + [plain(text[last:], *args)]))
    return render


def _key(key: str) -> Latex:
    """An evidence key, escaped (w_star stays w_star) and breakable after its underscores."""
    return _with_math_symbols(breakable)(key)


def appendix_ref(appendix: list, label: str, title: str, math: Latex, what: str) -> Latex:
    """Put ``math`` in the report's appendix under ``title``; the place it came from says
    ``what`` it was and refers to it."""
    appendix.append({"label": label, "title": title, "math": math})
    return Latex(r"\textit{" + escape(f"{what}; it is typeset in full in the appendix (")
                 + r"\hyperref[" + label + "]{" + escape(title) + "}).}")


def _to_appendix(long: tuple, key: str, value: Latex) -> Latex:
    """A value of more than 30 lines, typeset in the appendix; the table refers to it."""
    appendix, claim = long
    lines = value.count(r"\newline") + 1
    return appendix_ref(appendix, f"long:{_label(claim)[len('claim:'):]}:ev{len(appendix) + 1}",
                        f"{claim}, evidence {key}", value, f"{lines} lines")


def value_tex(v: Any, depth: int = 0) -> Latex:
    """Any JSON evidence value as LaTeX text (numbers in math, strings escaped and breakable)."""
    if v is None:
        return escape("--")
    if isinstance(v, bool):
        return escape("yes" if v else "no")
    if isinstance(v, (int, float)):
        return Latex(f"${number(v)}$")
    if isinstance(v, str):
        if is_scalar(v) and "/" in v:
            return Latex(f"${number(v, slash=True)}$")
        typeset = expression_tex(v)
        if typeset is not None:
            return typeset
        if "**" in v:
            return prose_tex(v, cell=True)
        return _with_math_symbols(breakable)(v, _LONG_TEXT)
    symbolic = _symbolic_matrix(v)
    if symbolic is not None:
        return Latex("$" + symbolic + "$")
    if is_matrix(v):
        if len(v) <= 8 and len(v[0]) <= 8:
            return Latex("$" + matrix(v) + "$")
        return escape(f"({len(v)} x {len(v[0])} matrix)")
    if isinstance(v, (list, tuple)):
        if not v:
            return escape("none")
        if all(isinstance(x, str) and len(x) <= 40 and not is_scalar(x) for x in v):
            typeset = [expression_tex(x) for x in v]  # ["2*(n + 3)/n", ...]: each item typeset
            if any(t is not None for t in typeset):
                return Latex(r",\allowbreak{} ".join(
                    t if t is not None else value_tex(x, depth + 1) for t, x in zip(typeset, v)))
            return breakable(", ".join(v), _LONG_TEXT)
        if all(is_scalar(x) for x in v):
            head = [number(x, 4) for x in v[:10]]
            more = r", \dots" + f"\\ ({len(v)}\\ \\text{{values}})" if len(v) > 10 else ""
            return Latex("$(" + r",\allowbreak ".join(head) + more + ")$")
        if depth >= 2:
            return escape(f"({len(v)} items)")
        items = [value_tex(x, depth + 1) for x in v[:12]]
        if len(v) > 12:
            items.append(escape(f"... ({len(v) - 12} more)"))
        return Latex(r"\newline ".join(items) if depth == 0 else "; ".join(items))
    if isinstance(v, dict):
        if depth >= 2:
            return escape(f"({len(v)} entries)")
        parts = [Latex(r"\textit{" + _key(str(k)) + "}: " + value_tex(x, depth + 1))
                 for k, x in v.items() if k not in _SKIP_KEYS and x != ""]
        return Latex("; ".join(parts))
    return breakable(str(v), _LONG_TEXT)


_EXPRESSION = re.compile(r"[\w\s.,+\-*/()^]+")


_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")


_SPAN = re.compile(r"[-\w.()*/+^ ]*\*\*[-\w.()*/+^ ]*")


def prose_tex(text: str, cell: bool = False) -> Latex:
    """Prose with sympy-printed expressions inside ("difference -2*(n**3 + ...)/n**4; ..."):
    in each maximal span that contains a power, the longest run of words that reads as an
    expression (prose words dropped from its ends) is typeset, the rest escaped (``cell``:
    breakable too, for a table cell's long identifiers)."""
    text, plain = str(text), _with_math_symbols(breakable if cell else escape)
    out, last = [], 0
    for m in _SPAN.finditer(text):
        found = _expression_in(m.group(0))
        if found is None:
            continue
        (a, b), typeset = found
        before = text[last:m.start() + a]
        last = m.start() + b
        if _wide(typeset):  # a line of its own: after the text before it, before the rest
            stop = re.match(r"[;,.:]?", text[last:]).end()
            typeset = Latex(typeset.replace(r"\resizebox{\linewidth}", r"\resizebox{0.97\linewidth}")
                            + plain(text[last:last + stop]))
            last += stop
            lead = r"\newline " if before.strip() or out else ""
            tail = r"\newline " if text[last:].strip() else ""
            out += [plain(before.rstrip()), Latex(lead), typeset, Latex(tail)]
            continue
        out += [plain(before), typeset]
    out.append(plain(text[last:].lstrip() if out and out[-1] == r"\newline " else text[last:]))
    return Latex("".join(out))


def _wide(typeset: str) -> bool:
    """A typeset expression that takes whole lines (scaled to the line, or split into lines)."""
    return r"\resizebox" in typeset or r"\newline" in typeset


def _expression_in(span: str) -> tuple[tuple[int, int], Latex] | None:
    """(start, end) in ``span`` of the longest word run that typesets, and its LaTeX."""
    words = [(w.start(), w.end(), w.group(0)) for w in re.finditer(r"\S+", span)]
    # words of prose, and shape notes such as "(NxN)" or "(mx1)"
    prose = [bool(re.fullmatch(r"[A-Za-z]{4,}[.,;:]?|\(\w+x\w+\)[.,;:]?", w))
             for _, _, w in words]
    for k in range(len(words)):
        if prose[k] and k + 1 < len(words):
            continue  # a word of prose ("difference -2*n"), not a symbol being subtracted
        for j in range(len(words), max(k, len(words) - 6), -1):
            if prose[j - 1] and j - 1 > k:
                continue
            piece = span[words[k][0]:words[j - 1][1]]
            if "**" not in piece:
                break
            typeset = expression_tex(piece)
            if typeset is not None:
                return (words[k][0], words[j - 1][1]), typeset
    return None


def _matrix_text(text: str) -> list | None:
    """``[[a, b], [c, d]]`` written as text, as a list of lists of entry strings."""
    if not (text.startswith("[[") and text.endswith("]]")) or text.count("[") != text.count("]"):
        return None
    rows = [r.split(",") for r in text[2:-2].split("], [")]
    if any("[" in e or "]" in e for r in rows for e in r):
        return None
    return [[e.strip() for e in r] for r in rows]


def _symbolic_matrix(v: Any) -> str | None:
    """A small list of equally long lists whose entries are numbers or expressions, at least
    one an expression (``[[1, 0, sigma0], ...]``), as a bmatrix; None for anything else."""
    if not (isinstance(v, (list, tuple)) and v and len(v) <= 8 and not is_matrix(v)):
        return None
    if not all(isinstance(r, (list, tuple)) and r and len(r) == len(v[0]) <= 8 for r in v):
        return None
    entries = [[number(x, 4) if is_scalar(x) else
                _expression_math(x, bare=True) if isinstance(x, str) else None for x in row]
               for row in v]
    if any(e is None for row in entries for e in row):
        return None
    return matrix(entries, entry=str)


def expression_tex(text: str, bare: bool = False) -> Latex | None:
    """An evidence string that is an arithmetic expression (``4*(d**4 + ...)/C**2``, as sympy
    prints derived quantities) typeset as math that fits its place; None for anything else."""
    math = _expression_math(text, bare)
    return None if math is None else _fit(math)


def _expression_math(text: str, bare: bool = False) -> str | None:
    """The math of ``expression_tex`` (no delimiters): read by the engine's whitelisting formula
    parser with every identifier a scalar symbol (never sympify); ``bare`` also takes a lone
    identifier or number (a matrix entry, a side of a relation)."""
    from .formula_parser import FUNCTIONS, FormulaError, read

    text = text.strip()
    operator = re.search(r"\*\*|[\w)]\s*\*\s*[\w(]|\^", text)
    if len(text) > 400000 or not (operator or text.startswith("[[") or (
            bare and re.fullmatch(r"[A-Za-z]\w*|-?\d+(\.\d+)?", text))):
        return None
    rows = _matrix_text(text)
    if rows is not None:
        small = is_matrix(rows) and len(rows) <= 8 and len(rows[0]) <= 8
        return _symbolic_matrix(rows) or (matrix(rows) if small else None)
    little_o = re.fullmatch(r"(.+?)\s*\+\s*o\((.+)\)", text)
    if little_o:  # an asymptotic expansion: the leading term + o(rate)
        head, rate = _expression_math(little_o.group(1)), _expression_math(little_o.group(2), True)
        return None if head is None or rate is None else f"{head} + o\\left({rate}\\right)"
    relation = re.fullmatch(r"([^=<>]+?)\s*(=|<=|>=)\s*([^=<>]+)", text)
    if relation:  # "2*lambda**2*(...)/n = 0"
        lhs, rhs = (_expression_math(relation.group(k), True) for k in (1, 3))
        op = {"=": "=", "<=": r"\le", ">=": r"\ge"}[relation.group(2)]
        return None if lhs is None or rhs is None else f"{lhs} {op} {rhs}"
    text = re.sub(r"\)\s+(?=[A-Za-z(])", ")*", text)  # "(4*d) C^(-2)": a product
    if not _EXPRESSION.fullmatch(text):
        return None
    # "Z.T*Z": matrices; their symbols do not commute, so the printed order is the product's
    matrices = bool(re.search(r"\w\.T\b", text))
    text = re.sub(r"\b([A-Za-z]\w*)\.T\b", r"\1_T_", text)
    names = {}
    for n in set(_IDENTIFIER.findall(text)) - set(FUNCTIONS):
        shown = n[:-3] + r"^{\top}" if n.endswith("_T_") else n
        if keyword.iskeyword(n):  # lambda: a symbol here, renamed for Python's grammar
            text = re.sub(rf"\b{n}\b", f"{n}_kw_", text)
            names[f"{n}_kw_"] = sympy.Symbol(shown, commutative=not matrices)
        else:
            names[n] = sympy.Symbol(shown, commutative=not matrices)
    try:
        return str(sympy_latex(read(text.replace("^", "**"), names, what="evidence").expr))
    except FormulaError:
        return None


def _fit(tex: str, width: float = 34.0) -> Latex:
    """Inline math, scaled down to the line where it is wider than a table's value column
    (a fraction does not break)."""
    if tex_width(tex) <= width:
        return Latex("$" + tex + "$")
    if tex_width(tex) > 3 * width:  # a long sum: lines of whole terms (a table cell holds
        lines = _term_lines(tex, width)  # no display environment)
        if len(lines) > 1:
            return Latex(r"\newline ".join(line if line.startswith(r"\resizebox") else
                                            "$" + line + "$" for line in lines))
    return Latex(r"\resizebox{\linewidth}{!}{$" + tex + "$}")


def _term_lines(tex: str, width: float) -> list[str]:
    """A sum's top-level terms (parenthesised sums opened), grouped greedily into lines of at
    most ``width``; a term wider than that is scaled down on its own line."""
    from .latex import _open, group_terms, split_terms

    out = []
    for chunk in group_terms((p for t in split_terms(tex) for p in _open(t, width)), width):
        body = " ".join(chunk)
        out.append(body if tex_width(body) <= width else
                   r"\resizebox{\linewidth}{!}{$" + body + "$}")
    return out


_INLINE_MATH = re.compile(r"(?<![\\$])\$([^$]+?)(?<!\\)\$(?!\$)")


def statement_tex(text: str, width: float = 50.0) -> Latex:
    """A claim's statement (LaTeX written with the claim) with each inline formula too long
    for a line set as a display that breaks at its relations and top-level terms."""
    from .latex import display

    return Latex(_INLINE_MATH.sub(
        lambda m: m.group(0) if tex_width(m.group(1)) <= width else display(m.group(1), width),
        str(text)))

