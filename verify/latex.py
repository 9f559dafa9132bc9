"""LaTeX for reports: escaping of plain strings, numbers, sympy objects, and line breaking of
long displayed formulas.

``Latex`` marks a string that is already LaTeX; everything else that reaches a template is plain
text and is escaped (the templates' ``finalize`` hook does it, see ``verify.report``).
"""
from __future__ import annotations

import math
import re
import unicodedata
from fractions import Fraction
from typing import Any, Iterable

import sympy


class Latex(str):
    """A string that is LaTeX already (never escaped again)."""


# ------------------------------------------------------------------------------------- escaping
_SPECIAL = {
    "\\": r"\textbackslash{}", "&": r"\&", "%": r"\%", "$": r"\$", "#": r"\#", "_": r"\_",
    "{": r"\{", "}": r"\}", "~": r"\textasciitilde{}", "^": r"\textasciicircum{}",
    "<": r"\textless{}", ">": r"\textgreater{}", "|": r"\textbar{}", '"': "''",
}
# Unicode that pdflatex (utf8 inputenc, T1) cannot typeset by itself, as math.
_UNICODE_MATH = {
    "α": r"\alpha", "β": r"\beta", "γ": r"\gamma", "δ": r"\delta", "ε": r"\varepsilon",
    "η": r"\eta", "θ": r"\theta", "λ": r"\lambda", "μ": r"\mu", "ν": r"\nu", "π": r"\pi",
    "ρ": r"\rho", "σ": r"\sigma", "τ": r"\tau", "φ": r"\varphi", "χ": r"\chi", "ψ": r"\psi",
    "ω": r"\omega", "Γ": r"\Gamma", "Δ": r"\Delta", "Θ": r"\Theta", "Λ": r"\Lambda",
    "Σ": r"\Sigma", "Φ": r"\Phi", "Ψ": r"\Psi", "Ω": r"\Omega", "∇": r"\nabla", "∂": r"\partial",
    "≤": r"\le", "≥": r"\ge", "≠": r"\ne", "≈": r"\approx", "±": r"\pm", "×": r"\times",
    "⊗": r"\otimes", "·": r"\cdot", "→": r"\to", "←": r"\leftarrow", "∈": r"\in",
    "∞": r"\infty", "√": r"\surd", "∑": r"\sum", "⋆": r"\star", "−": "-", "∼": r"\sim",
    "⊤": r"\top", "‖": r"\|", "≼": r"\preccurlyeq", "≽": r"\succcurlyeq", "𝒩": r"\mathcal{N}",
    "𝔼": r"\mathbb{E}", "ℝ": r"\mathbb{R}", "ζ": r"\zeta", "ξ": r"\xi", "κ": r"\kappa",
    "†": r"\dagger", "Â": r"\hat{A}", "ŷ": r"\hat{y}", "Ẑ": r"\hat{Z}",
}
_UNICODE_TEXT = {"…": r"\dots{}", "–": "--", "—": "---", "‘": "`", "’": "'", "“": "``",
                 "”": "''", "\u00a0": "~"}


_SUPERSCRIPT = dict(zip("⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱᵏᵀᵗʲᵈʰᴸ", "0123456789+-=()nik\x00tjdhL"))
_ACCENTS = {"\u0302": "hat", "\u0304": "bar"}  # a letter with a combining accent: Z̄
_SUBSCRIPT = dict(zip("₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₒₓₕₖₗₘₙₚₛₜᵢⱼᵣ", "0123456789+-=()aeoxhklmnpstijr"))


def _math_run(chars: str) -> str:
    """A run of Unicode math characters as math (escape puts it in one $...$): super- and
    subscript characters grouped (Σ⁻¹ -> \\Sigma^{-1})."""
    out, k = [], 0
    while k < len(chars):
        for table, mark in ((_SUPERSCRIPT, "^"), (_SUBSCRIPT, "_")):
            j = k
            while j < len(chars) and chars[j] in table:
                j += 1
            if j > k:
                body = "".join(table[c] for c in chars[k:j]).replace("\x00", r"\top ")
                out.append(mark + "{" + body.strip() + "}")
                k = j
                break
        else:
            out.append(_UNICODE_MATH[chars[k]] + " ")
            k += 1
    return "".join(out).strip()


# A^{1/2}, e_{d+1}, and a bare ^ with one letter or an integer: U^T, D^2, Sigma^-1
_ASCII_SUPERSCRIPT = re.compile(r"([\^_])\{([-+/*.A-Za-z0-9]{1,12}|[-+/*.A-Za-z0-9]*"
                                r"\([-+/*.A-Za-z0-9_']{1,12}\)[-+/*.A-Za-z0-9]*)\}"
                                r"|(\^)(-?\d+|[A-Za-z])(?![A-Za-z0-9])")


def _script(m: re.Match) -> str:
    return (m.group(1) or m.group(3)) + "{" + (m.group(2) or m.group(4)) + "}"
_SUPERSCRIPT_BASE = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789)]")


def _is_math(ch: str) -> bool:
    return ch in _UNICODE_MATH or ch in _SUPERSCRIPT or ch in _SUBSCRIPT


def escape(text: Any) -> Latex:
    """Plain text -> LaTeX that prints it literally (pdflatex-safe, ASCII out); Unicode math
    (Greek, operators, super- and subscripts, accented letters) becomes math, each run of it
    one $...$ (two side by side would read as $$)."""
    out: list[tuple[bool, str]] = []  # (is math, LaTeX)
    text = str(text)
    k = 0
    while k < len(text):
        ch = text[k]
        if k + 1 < len(text) and text[k + 1] in _ACCENTS and ch.isascii() and ch.isalpha():
            out.append((True, f"\\{_ACCENTS[text[k + 1]]}{{{ch}}}"))
            k += 2
            continue
        sup = _ASCII_SUPERSCRIPT.match(text, k) if k and text[k - 1] in _SUPERSCRIPT_BASE else None
        if sup:  # A^{1/2}, e_{d+1}, written in ASCII where Unicode has no script for it
            out.append((True, _script(sup)))
            k = sup.end()
            continue
        if _is_math(ch):
            j = k
            while j < len(text) and _is_math(text[j]):
                j += 1
            out.append((True, _math_run(text[k:j])))
            k = j
            continue
        k += 1
        if ch == "-" and text[k:k + 1] == "-":  # "--budget", not an en dash
            out.append((False, "-{}"))
        elif ch in _SPECIAL:
            out.append((False, _SPECIAL[ch]))
        elif ch in _UNICODE_TEXT:
            out.append((False, _UNICODE_TEXT[ch]))
        elif ch == "\n" or ch == "\t" or ord(ch) < 32:
            out.append((False, " "))
        elif ord(ch) < 128:
            out.append((False, ch))
        else:
            base = "".join(c for c in unicodedata.normalize("NFKD", ch) if ord(c) < 128)
            out.append((False, escape(base) if base else "?"))
    pieces, k = [], 0
    while k < len(out):
        if out[k][0]:
            j = k
            while j < len(out) and out[j][0]:
                j += 1
            pieces.append("$" + " ".join(m for _, m in out[k:j]) + "$")
            k = j
        else:
            pieces.append(out[k][1])
            k += 1
    return Latex("".join(pieces))


_BREAK_AFTER = set(",;:=+*/([{")


def breakable(text: Any, limit: int | None = None) -> Latex:
    """Escaped text that may break after punctuation (long identifiers, formulas in text).

    With ``limit``, text longer than ``limit`` characters is cut and says how long it was.
    """
    text = str(text)
    if limit is not None and len(text) > limit:
        text = text[:limit].rstrip() + f" ... ({len(text)} characters)"
    out = []
    run, k = 0, 0
    while k < len(text):
        ch = text[k]
        script = _ASCII_SUPERSCRIPT.match(text, k) if k and text[k - 1] in _SUPERSCRIPT_BASE \
            else None
        if script:  # e_{d+1}: one piece of math, as escape sets it
            out.append(escape(text[k - 1:script.end()])[len(escape(text[k - 1])):])
            k, run = script.end(), run + len(script.group(0))
            continue
        out.append("-{}" if ch == "-" and text[k + 1:k + 2] == "-" else escape(ch))
        k += 1
        run = 0 if ch == " " else run + 1
        if ch in _BREAK_AFTER or ch == "_" and run > 12 or run > 24:
            out.append(r"\allowbreak{}")
            run = 0
    return Latex("".join(out))


def code(text: Any, limit: int | None = None) -> Latex:
    """Text in typewriter type, breakable (formula texts as the user types them)."""
    return Latex(r"\texttt{" + breakable(text, limit) + "}")


# -------------------------------------------------------------------------------------- numbers
_RATIONAL = re.compile(r"^\s*(-?)\s*(\d+)\s*/\s*(\d+)\s*$")


def number(value: Any, digits: int = 6, slash: bool = False) -> Latex:
    """A number in math mode (no $): ints as is, floats with ``digits`` significant digits in
    scientific notation when small or large, rational strings ``p/q`` as fractions (or as
    ``p/q`` in running text with ``slash``)."""
    if isinstance(value, bool):
        return Latex(r"\text{yes}" if value else r"\text{no}")
    if isinstance(value, int):
        return Latex(str(value))
    if isinstance(value, Fraction):
        return rational(value)
    if isinstance(value, sympy.Basic):
        if value.is_Rational:
            return rational(Fraction(int(value.p), int(value.q)))
        return Latex(sympy.latex(value))
    if isinstance(value, str):
        m = _RATIONAL.match(value)
        if m:
            q = Fraction(int(m.group(2)), int(m.group(3))) * (-1 if m.group(1) else 1)
            return Latex(str(q)) if slash else rational(q)
        try:
            value = float(value)
        except ValueError:
            return Latex(r"\text{" + escape(value) + "}")
        if value == int(value) and abs(value) < 1e15 and "." not in str(value):
            return Latex(str(int(value)))
    x = float(value)
    if math.isnan(x):
        return Latex(r"\mathrm{NaN}")
    if math.isinf(x):
        return Latex(r"\infty" if x > 0 else r"-\infty")
    if x == 0:
        return Latex("0")
    exp = math.floor(math.log10(abs(x)))
    if -3 <= exp < 5:
        text = f"{x:.{digits}g}"
        return Latex(text if "e" not in text else _sci(x, digits))
    return _sci(x, digits)


def _sci(x: float, digits: int) -> Latex:
    mant, exp = f"{x:.{max(digits - 1, 0)}e}".split("e")
    mant = mant.rstrip("0").rstrip(".") if "." in mant else mant
    exp_i = int(exp)
    if mant in ("1", "-1"):
        return Latex(f"{'-' if mant == '-1' else ''}10^{{{exp_i}}}")
    return Latex(f"{mant}\\times 10^{{{exp_i}}}")


def rational(q: Fraction) -> Latex:
    if q.denominator == 1:
        return Latex(str(q.numerator))
    sign = "-" if q < 0 else ""
    return Latex(f"{sign}\\tfrac{{{abs(q.numerator)}}}{{{q.denominator}}}")


def is_matrix(value: Any) -> bool:
    """A non-empty list of equally long lists of scalars."""
    return (isinstance(value, (list, tuple)) and bool(value)
            and all(isinstance(r, (list, tuple)) and r and len(r) == len(value[0]) for r in value)
            and all(is_scalar(v) for r in value for v in r))


def is_scalar(value: Any) -> bool:
    if isinstance(value, (bool, int, float, Fraction)):
        return True
    return isinstance(value, str) and (_RATIONAL.match(value) is not None or _is_float(value))


def _is_float(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def matrix(rows: Iterable[Iterable[Any]], digits: int = 4, entry=None) -> Latex:
    """A small matrix as a bmatrix (math mode): numbers, or each entry through ``entry``."""
    entry = entry or (lambda v: number(v, digits))
    body = r" \\ ".join(" & ".join(entry(v) for v in row) for row in rows)
    return Latex(r"{\renewcommand{\arraystretch}{1.4}\begin{bmatrix}" + body
                 + r"\end{bmatrix}}")


# ---------------------------------------------------------------------------------------- sympy
def sympy_latex(expr: Any) -> Latex:
    """sympy's LaTeX with the report's conventions (transpose as ^\\top)."""
    tex = sympy.latex(expr)
    tex = tex.replace("^{T}", r"^{\top}").replace(r"\mathbb{I}", "I")
    return Latex(tex)


# ------------------------------------------------------------------------ formula line breaking
_TOKEN = re.compile(r"\\[A-Za-z]+\*?|\\.|[{}^_]|\s+|.", re.S)
_SPACES = {r"\,": 0.2, r"\:": 0.25, r"\;": 0.3, r"\ ": 0.3, r"\!": -0.2, r"\quad": 1.2,
           r"\qquad": 2.4}
_TEXTLIKE = {r"\operatorname", r"\mathrm", r"\text", r"\textrm", r"\mathbf", r"\mathit",
             r"\mathsf", r"\mathtt", r"\textit", r"\textbf"}
_INVISIBLE = {r"\left", r"\right", r"\big", r"\Big", r"\bigg", r"\Bigg", r"\displaystyle",
              r"\textstyle", r"\limits", r"\nolimits"}
_FRACS = {r"\frac", r"\dfrac", r"\tfrac"}
_ONE_ARG = {r"\mathbb", r"\mathcal", r"\boldsymbol", r"\hat", r"\tilde", r"\bar", r"\vec",
            r"\overline", r"\widehat", r"\sqrt"}


def _tokens(tex: str) -> list[str]:
    return [t for t in _TOKEN.findall(tex) if not t.isspace()]


def tex_width(tex: str) -> float:
    """Rough visible width of a formula in em-like units (a letter is about 1)."""
    toks = _tokens(tex)
    width, _ = _width(toks, 0, None)
    return width


def _group(toks: list[str], i: int) -> tuple[float, int]:
    """Width of the group (or single token) starting at i, and the index after it."""
    if i >= len(toks):
        return 0.0, i
    if toks[i] == "{":
        return _width(toks, i + 1, "}")
    return _width_one(toks, i)


def _width(toks: list[str], i: int, stop: str | None) -> tuple[float, int]:
    total, rows = 0.0, []
    while i < len(toks):
        t = toks[i]
        if stop is not None and t == stop:
            return max(rows + [total]), i + 1
        if t == r"\\":
            rows.append(total)
            total, i = 0.0, i + 1
            continue
        if t == r"\begin":  # an environment (a matrix): as wide as its widest row
            _, i = _skip_group(toks, i + 1)
            w, i = _width(toks, i, r"\end")
            _, i = _skip_group(toks, i)
            total += w + 1.2
            continue
        w, i = _width_one(toks, i)
        total += w
    return max(rows + [total]), i


def _skip_group(toks: list[str], i: int) -> tuple[None, int]:
    if i < len(toks) and toks[i] == "{":
        depth = 0
        while i < len(toks):
            depth += toks[i] == "{"
            depth -= toks[i] == "}"
            i += 1
            if depth == 0:
                break
        return None, i
    return None, i + 1


def _text_len(toks: list[str], i: int) -> tuple[float, int]:
    if i < len(toks) and toks[i] == "{":
        j, depth, n = i, 0, 0
        while j < len(toks):
            depth += toks[j] == "{"
            depth -= toks[j] == "}"
            if toks[j] not in "{}":
                n += 1
            j += 1
            if depth == 0:
                break
        return 0.8 * n, j
    return 0.8, i + 1


def _width_one(toks: list[str], i: int) -> tuple[float, int]:
    t = toks[i]
    if t in _FRACS:
        a, i = _group(toks, i + 1)
        b, i = _group(toks, i)
        return max(a, b) + 0.4, i
    if t in _TEXTLIKE:
        return _text_len(toks, i + 1)
    if t in _ONE_ARG:
        w, j = _group(toks, i + 1)
        return w + (0.8 if t == r"\sqrt" else 0.0), j
    if t in _INVISIBLE:
        return 0.0, i + 1
    if t in _SPACES:
        return _SPACES[t], i + 1
    if t in ("^", "_"):
        w, j = _group(toks, i + 1)
        return 0.7 * w, j
    if t == "{":
        return _width(toks, i + 1, "}")
    if t == "}":
        return 0.0, i + 1
    if t in ("+", "-", "=", "<", ">") or t in (r"\le", r"\ge", r"\ne", r"\approx", r"\pm",
                                               r"\cdot", r"\times", r"\otimes", r"\to"):
        return 1.8, i + 1
    if t in ("(", ")", "[", "]", ",", ".", ";", "|", "!", r"\{", r"\}"):
        return 0.5, i + 1
    return 1.0, i + 1


def _top_level(tex: str):
    """Yield (index, token, at top level) over tex; braces, brackets, parentheses and
    \\left ... \\right open levels."""
    depth = 0
    i = 0
    while i < len(tex):
        if tex.startswith(r"\left", i) and not tex[i + 5:i + 6].isalpha():
            depth += 1
            i += 5
            continue
        if tex.startswith(r"\right", i) and not tex[i + 6:i + 7].isalpha():
            depth -= 1
            i += 6
            continue
        if tex.startswith(r"\begin", i):
            depth += 1
            i += 6
            continue
        if tex.startswith(r"\end", i):
            depth -= 1
            i += 4
            continue
        ch = tex[i]
        if ch == "\\":  # a command or an escaped character: skip it whole
            j = i + 1
            while j < len(tex) and tex[j].isalpha():
                j += 1
            yield i, tex[i:max(j, i + 2)], depth == 0
            i = max(j, i + 2)
            continue
        if ch in "{([":
            depth += 1
        elif ch in "})]":
            depth = max(depth - 1, 0)
        yield i, ch, depth == 0 and ch not in "{}()[]"
        i += 1


def split_terms(tex: str) -> list[str]:
    """Split a sum at its top-level + and - (signs stay with the term that follows)."""
    cuts = []
    prev = ""
    for i, tok, top in _top_level(tex):
        if top and tok in "+-" and i > 0 and prev not in ("", "=", "(", "[", ",", "+", "-", "^",
                                                          "_", r"\cdot", r"\times"):
            cuts.append(i)
        if not tok.isspace():
            prev = tok
    parts, start = [], 0
    for c in cuts:
        parts.append(tex[start:c].strip())
        start = c
    parts.append(tex[start:].strip())
    return [p for p in parts if p]


def split_relation(tex: str) -> tuple[str, str, str] | None:
    """(lhs, relation, rhs) at the first top-level =, or None."""
    for i, tok, top in _top_level(tex):
        if top and tok == "=":
            return tex[:i].strip(), "=", tex[i + 1:].strip()
    return None


_SEPARATOR = re.compile(r"\s*([,;]?)\s*\\q?quad\s*")


def split_statements(tex: str) -> list[str]:
    """Split at top-level ``,\\quad`` / ``;\\qquad`` separators (several facts on one line)."""
    pieces, start = [], 0
    spans = []
    for i, tok, top in _top_level(tex):
        if top and tok in (r"\quad", r"\qquad"):
            spans.append(i)
    for i in spans:
        m = _SEPARATOR.search(tex, max(start, i - 2))
        if m is None or m.start() > i:
            continue
        pieces.append(tex[start:m.start()].strip() + m.group(1))
        start = m.end()
    pieces.append(tex[start:].strip())
    return [p for p in pieces if p]


def display(tex: str, width: float = 62.0) -> Latex:
    """A displayed formula that fits the text width: one line if it fits, otherwise an
    ``align*`` with one statement per line and long sums broken at their top-level + and -;
    a line that is still too wide (a single huge term) is scaled down to the width."""
    tex = tex.strip()
    if not tex:
        return Latex("")
    if tex_width(tex) <= width:
        return Latex("\\[\n" + tex + "\n\\]")
    lines: list[tuple[str, str]] = []
    for statement in split_statements(tex):
        broken = _break_statement(statement, width)
        if (len(broken) == 1 and lines and tex_width(lines[-1][0] + lines[-1][1]) + 2.4
                + tex_width(statement) <= width):  # short statements share a line
            lines[-1] = (lines[-1][0], lines[-1][1] + r"\quad " + statement)
        else:
            lines.extend(broken)
    body = " \\\\\n".join(_fit(head, tail, width) for head, tail in lines)
    return Latex("\\begin{align*}\n" + body + "\n\\end{align*}")


def _fit(head: str, tail: str, width: float) -> str:
    """One line of the align*, shrunk to the width if it is still too wide."""
    w = tex_width(head) + tex_width(tail)
    if w <= width:
        return f"{head} &{tail}" if head else f"&{tail}"
    # tex_width reads wide fractions and \left...\right nests up to a fifth short
    factor = max(0.3, width / (1.2 * w))
    return f"{head} &\\scalebox{{{factor:.2f}}}{{$\\displaystyle {{}}{tail}$}}"


def _break_statement(statement: str, width: float) -> list[tuple[str, str]]:
    """(left of &, right of &) lines: ``lhs &= t1 + t2`` then ``&\\quad + t3 ...``."""
    rel = split_relation(statement)
    if rel is None:
        lhs, op, rhs = "", "", statement
    else:
        lhs, op, rhs = rel
    if tex_width(statement) <= width:
        return [(lhs, f"{op} {rhs}".strip())]
    budget = width - tex_width(lhs) - 2
    chunks = group_terms((piece for t in split_terms(rhs) for piece in _open(t, budget)), budget,
                         indent=2.0)
    out = []
    for k, chunk in enumerate(chunks):
        body = " ".join(_signed(t, first=(j == 0 and k == 0)) for j, t in enumerate(chunk))
        out.append((lhs, f"{op} {body}".strip()) if k == 0 else ("", "\\quad " + body))
    return out


def group_terms(terms: Iterable[str], budget: float, indent: float = 0.0) -> list[list[str]]:
    """Terms grouped greedily into lines of at most ``budget`` (a continuation line starts
    ``indent`` in)."""
    chunks: list[list[str]] = [[]]
    used = 0.0
    for term in terms:
        w = tex_width(term) + 1.8
        if chunks[-1] and used + w > budget:
            chunks.append([])
            used = indent
        chunks[-1].append(term)
        used += w
    return chunks


_DELIM = re.compile(r"\\(left|right)(?![A-Za-z])")


def _open(term: str, budget: float, depth: int = 0) -> list[str]:
    """A term too wide for a line that ends in a parenthesised sum, ``c \\left(a + b\\right)``,
    opened into lines ``c \\bigl(a``, ``+ b\\bigr)`` (recursively, a few levels), so a huge
    polynomial breaks instead of shrinking past reading."""
    if depth > 3 or tex_width(term) <= budget or not term.rstrip().endswith(r"\right)"):
        return [term]
    term = term.rstrip()
    marks = list(_DELIM.finditer(term))
    level, start = 0, None
    for m in reversed(marks):
        level += 1 if m.group(1) == "right" else -1
        if level == 0:
            start = m
            break
    if start is None or not term.startswith("(", start.end()):
        return [term]
    prefix, inner = term[:start.start()], term[start.end() + 1:-len(r"\right)")]
    parts = split_terms(inner)
    if len(parts) < 2:
        return [term]
    pieces = [prefix + r"\bigl(" + parts[0], *parts[1:-1], parts[-1] + r"\bigr)"]
    out = []
    for k, piece in enumerate(pieces):
        out += _open(piece, budget, depth + 1) if 0 < k < len(pieces) - 1 else [piece]
    return out


def _signed(term: str, first: bool) -> str:
    if first or term.startswith(("+", "-")):
        return term
    return "+ " + term
