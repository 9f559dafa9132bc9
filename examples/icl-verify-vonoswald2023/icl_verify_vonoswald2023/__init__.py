"""vonoswald2023: J. von Oswald et al., "Transformers learn in-context by gradient descent" (2023).

Prop. 1: one linear self-attention step with the stated weights moves every token's label by one
gradient-descent step of W from W_0 on L(W) = 1/(2N) sum_i ||W x_i - y_i||^2.

A paper plugin: ``CLAIMS`` and ``DEFINITIONS``, registered under the entry-point group
``icl_verify.papers`` (setup.cfg).  The check is the kit's forward-pass identity."""
from models.lsa import attention
from proofs_checks.kit import ForwardIdentity, forward_identity, identity_truth
from verify.claim import Claim
from verify.definitions import Definition
from verify.formulas import FormulaSymbol, NamedFormula

DEFINITIONS = (
    Definition("N", "the number of context tokens e_i = (x_i, y_i)", "Sec. 3"),
    Definition("d", "the dimension of the inputs x_i", "Sec. 3"),
    Definition("m", "the dimension of the targets y_i (N_y in the paper)", "Sec. 3"),
    Definition("eta", "the learning rate of the gradient-descent step", "Prop. 1"),
    Definition("W0", "the initial weights W_0 of the linear model y = W x", "Prop. 1"),
    Definition("W", "the weights of the linear model y = W x", "eq. (1)"),
    Definition("X", "the context inputs [x_1 ... x_N]", "eq. (1)"),
    Definition("Y", "the context targets [y_1 ... y_N]", "eq. (1)"),
    Definition("G", "the gradient of L at W_0 (the kit differentiates L)", "eq. (2)"),
)
SYM = {s.name: s for s in (
    FormulaSymbol("N"), FormulaSymbol("d"), FormulaSymbol("m"), FormulaSymbol("eta"),
    FormulaSymbol("W0", "matrix", ("m", "d")), FormulaSymbol("W", "matrix", ("m", "d")),
    FormulaSymbol("X", "matrix", ("d", "N")), FormulaSymbol("Y", "matrix", ("m", "N")),
    FormulaSymbol("G", "matrix", ("m", "d")))}


def uses(*names: str) -> tuple[FormulaSymbol, ...]:
    """Each formula declares only the symbols it uses (a mutant cannot swap in another)."""
    return tuple(SYM[n] for n in names)


PROJ = "BlockMatrix([[Identity(d), ZeroMatrix(d, m)], [ZeroMatrix(m, d), ZeroMatrix(m, m)]])"
SQ = ("d+m", "d+m")
FORMULAS = (
    NamedFormula("W_K", PROJ, uses("d", "m"), equation="Prop. 1", shape=SQ),
    NamedFormula("W_Q", PROJ, uses("d", "m"), equation="Prop. 1", shape=SQ),
    NamedFormula("W_V", "BlockMatrix([[ZeroMatrix(d, d), ZeroMatrix(d, m)], [W0, -Identity(m)]])",
                 uses("d", "m", "W0"), equation="Prop. 1", shape=SQ),
    NamedFormula("P", "eta/N*Identity(d+m)", uses("N", "d", "m", "eta"), equation="Prop. 1",
                 shape=SQ),
    NamedFormula("L", "trace((W*X - Y).T*(W*X - Y))/(2*N)", uses("N", "W", "X", "Y"),
                 equation="eq. (1)"),
    NamedFormula("DeltaW", "-eta*G", uses("eta", "G", "m", "d"), equation="eq. (2)",
                 shape=("m", "d")),
)

def model(a):
    """One LSA step on Z = [[X, x_q], [Y, 0]], attention over the N context tokens."""
    N, m = a.sizes["N"], a.sizes["m"]
    Z = a.blocks([[a["X"], a["x_q"]], [a["Y"], a.zeros(m, 1)]])
    PV, KQ = a.formula("P") @ a.formula("W_V"), a.formula("W_K").T @ a.formula("W_Q")
    return Z + attention(Z, PV, KQ, a.mask(N))


def claimed(a):
    """Every token (x_j, y_j) -> (x_j, y_j - DeltaW x_j), DeltaW = -eta grad L(W_0)."""
    m = a.sizes["m"]
    dW = a.formula("DeltaW", G=a.grad("L", "W", a["W0"]))
    X = a.blocks([[a["X"], a["x_q"]]])
    return a.blocks([[X], [a.blocks([[a["Y"], a.zeros(m, 1)]]) - dW @ X]])


SPEC = ForwardIdentity(
    model, claimed, inputs={"X": ("d", "N"), "Y": ("m", "N"), "x_q": ("d", "1"),
                            "W0": ("m", "d")},
    scalars=("eta",), exact_sizes=({"N": 2, "d": 2, "m": 1}, {"N": 3, "d": 2, "m": 2}),
    sizes={"quick": {"N": 10, "d": 3, "m": 2}, "default": {"N": 20, "d": 5, "m": 2},
           "paper": {"N": 50, "d": 10, "m": 3}},
    what="the token after one step",
    model_latex=r"Z + P W_V Z M Z^\top W_K^\top W_Q Z",
    claimed_latex=r"\begin{bmatrix} X \\ Y - \Delta W X \end{bmatrix},\ "
                  r"\Delta W = -\eta \nabla_W L(W_0)")

PROP1 = Claim(
    id="vonoswald2023.prop1",
    title="One linear self-attention step is one gradient-descent step on the context",
    paper="vonoswald2023",
    statement=r"With $W_K=W_Q=\left[\begin{smallmatrix}I_x&0\\0&0\end{smallmatrix}\right]$, "
              r"$W_V=\left[\begin{smallmatrix}0&0\\W_0&-I_y\end{smallmatrix}\right]$ and "
              r"$P=\frac{\eta}{N}I$, $e_j\leftarrow e_j+PW_V\sum_i e_ie_i^\top W_K^\top W_Qe_j$ "
              r"maps $e_j=(x_j,y_j)$ to $(x_j,\,y_j-\Delta W x_j)$ with "
              r"$\Delta W=-\eta\nabla_W L(W_0)$.",
    assumptions=("tokens e_j = (x_j, y_j) in R^{d+m}; the sum runs over the N context tokens",),
    formulas=FORMULAS,
    checks=forward_identity(SPEC),
    setting=SPEC,  # the runner refuses --size values far above its sizes
    exact=identity_truth(SPEC, FORMULAS, more_sizes=({"N": 4, "d": 3, "m": 2},)),  # for mutate
)

CLAIMS = [PROP1]
