"""A claim's LaTeX statement as text a terminal shows: Greek letters, operators, fractions,
super- and subscripts in Unicode (``show``).  Only for reading: nothing here is parsed as math."""
from __future__ import annotations

import re

SYMBOLS = {
    "alpha": "α", "beta": "β", "gamma": "γ", "delta": "δ", "epsilon": "ε", "varepsilon": "ε",
    "zeta": "ζ", "eta": "η", "theta": "θ", "kappa": "κ", "lambda": "λ", "mu": "μ", "nu": "ν",
    "xi": "ξ", "pi": "π", "rho": "ρ", "sigma": "σ", "tau": "τ", "phi": "φ", "varphi": "φ",
    "chi": "χ", "psi": "ψ", "omega": "ω", "Gamma": "Γ", "Delta": "Δ", "Theta": "Θ",
    "Lambda": "Λ", "Xi": "Ξ", "Pi": "Π", "Sigma": "Σ", "Phi": "Φ", "Psi": "Ψ", "Omega": "Ω",
    "sim": "∼", "le": "≤", "leq": "≤", "ge": "≥", "geq": "≥", "neq": "≠", "ne": "≠",
    "cdot": "·", "times": "×", "to": "→", "rightarrow": "→", "leftarrow": "←",
    "Rightarrow": "⇒", "Leftrightarrow": "⇔", "mapsto": "↦", "infty": "∞", "in": "∈",
    "notin": "∉", "subset": "⊂", "subseteq": "⊆", "sum": "∑", "prod": "∏", "approx": "≈",
    "equiv": "≡", "propto": "∝", "otimes": "⊗", "odot": "⊙", "circ": "∘", "partial": "∂",
    "nabla": "∇", "ldots": "…", "cdots": "⋯", "dots": "…", "vdots": "⋮", "star": "⋆",
    "top": "ᵀ", "pm": "±", "mp": "∓", "forall": "∀", "exists": "∃", "|": "‖", "langle": "⟨",
    "rangle": "⟩", "lfloor": "⌊", "rfloor": "⌋", "lceil": "⌈", "rceil": "⌉", "ell": "ℓ",
    "setminus": "∖", "cup": "∪", "cap": "∩", "wedge": "∧", "vee": "∨", "succeq": "⪰",
    "preceq": "⪯", "preccurlyeq": "≼", "succcurlyeq": "≽", "dagger": "†", "succ": "≻", "prec": "≺", "ll": "≪", "gg": "≫", "quad": "  ",
    "qquad": "    ", "lesssim": "≲", "gtrsim": "≳", "sqrt": "√", "log": "log", "exp": "exp",
    "min": "min", "max": "max", "inf": "inf", "sup": "sup", "lim": "lim", "det": "det",
    "tr": "tr", "arg": "arg", "Pr": "Pr", "mid": "|", "colon": ":", "{": "{", "}": "}",
    "_": "_", "%": "%", "&": "&", "#": "#", "$": "$",
}
BLACKBOARD = {"E": "𝔼", "R": "ℝ", "N": "ℕ", "Z": "ℤ", "Q": "ℚ", "C": "ℂ", "P": "ℙ", "1": "𝟙"}
CALLIGRAPHIC = {"N": "𝒩", "L": "ℒ", "O": "𝒪", "S": "𝒮", "D": "𝒟", "F": "ℱ", "H": "ℋ",
                "T": "𝒯", "X": "𝒳", "Y": "𝒴", "W": "𝒲", "A": "𝒜", "B": "ℬ", "M": "ℳ"}
SUPER = dict(zip("0123456789+-=()nikTtjd", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿⁱᵏᵀᵗʲᵈ"))
SUB = dict(zip("0123456789+-=()aeoxhklmnpstijr", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₒₓₕₖₗₘₙₚₛₜᵢⱼᵣ"))
DROP = {"left", "right", "big", "Big", "bigg", "Bigg", "bigl", "bigr", "Bigl", "Bigr",
        "displaystyle", "textstyle", "limits", "nolimits", ",", ";", "!", ":", " "}
STYLE = {"dot", "mathrm", "text", "textrm", "textit", "mathit", "mathbf", "boldsymbol", "bm",
         "operatorname", "mathsf", "texttt", "emph", "textbf", "hat", "tilde", "bar",
         "widehat", "widetilde", "overline", "vec", "underline"}
ACCENT = {"dot": "\u0307", "hat": "\u0302", "tilde": "\u0303", "bar": "\u0304", "widehat": "\u0302",
          "widetilde": "\u0303", "overline": "\u0305", "vec": "\u20d7"}


def _group(text: str, i: int) -> tuple[str, int]:
    """The argument at ``i``: a {...} group (balanced) or one character/command."""
    while i < len(text) and text[i] == " ":
        i += 1
    if i >= len(text):
        return "", i
    if text[i] == "{":
        depth, j = 0, i
        while j < len(text):
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            if depth == 0:
                return text[i + 1:j], j + 1
            j += 1
        return text[i + 1:], len(text)
    if text[i] == "\\":
        m = re.match(r"\\([A-Za-z]+|.)", text[i:])
        return m.group(0), i + len(m.group(0))
    return text[i], i + 1


def _script(body: str, table: dict, mark: str) -> str:
    shown = readable(body)
    if shown and all(ch in table for ch in shown):
        return "".join(table[ch] for ch in shown)
    if mark == "^" and shown == "ᵀ":
        return "ᵀ"
    return f"{mark}{shown}" if len(shown) == 1 else f"{mark}({shown})"


def _paren(text: str) -> str:
    return text if re.fullmatch(r"[\w.′⁻¹²³ᵀ√]+", text) else f"({text})"


def readable(text: str) -> str:
    """``text`` (LaTeX, possibly inside $...$) in Unicode; unknown commands keep their name."""
    out, i = [], 0
    text = text.replace("$", "")
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            m = re.match(r"\\([A-Za-z]+|.)", text[i:])
            name, i = m.group(1), i + len(m.group(0))
            if name == "\\":
                out.append(" ")
            elif name in DROP:
                out.append(" " if name in (",", ";", ":", " ") else "")
            elif name in ("frac", "dfrac", "tfrac"):
                num, i = _group(text, i)
                den, i = _group(text, i)
                out.append(f"{_paren(readable(num))}/{_paren(readable(den))}")
            elif name == "sqrt":
                arg, i = _group(text, i)
                out.append(f"√{_paren(readable(arg))}")
            elif name in ("mathbb", "mathcal"):
                arg, i = _group(text, i)
                table = BLACKBOARD if name == "mathbb" else CALLIGRAPHIC
                out.append("".join(table.get(c, c) for c in arg))
            elif name in STYLE:
                arg, i = _group(text, i)
                out.append(readable(arg) + ACCENT.get(name, ""))
            elif name in ("begin", "end"):
                env, i = _group(text, i)
                out.append({"bmatrix": "[", "pmatrix": "("}.get(env, "") if name == "begin"
                           else {"bmatrix": "]", "pmatrix": ")"}.get(env, ""))
            else:
                out.append(SYMBOLS.get(name, name))
        elif ch in "^_":
            body, i = _group(text, i + 1)
            out.append(_script(body, SUPER if ch == "^" else SUB, ch))
        elif ch in "{}":
            i += 1
        elif ch == "&":
            out.append(" ")
            i += 1
        else:
            out.append(ch)
            i += 1
    return re.sub(r"[ \t]{2,}", " ", "".join(out)).strip()
