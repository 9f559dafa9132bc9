"""xie2025's definitions of the symbols its claims' formulas use, with where the paper makes them.

The paper writes w for three things: Definition 3 (eq. (11)) makes it y_q-LSA's trainable vector
(y_q = w^T x_q), the paper-wide meaning; Sec. 4.1, just after eq. (9), uses it for the weights of
the linear predictor f(x_q) = w^T x_q that one GD step from w* produces (xie2025.eq9's
least-squares variable); App. B.3 redefines w = w_hat - w* (xie2025.thm4), the trainable vector
being called v there.  The last two are local definitions.

Where the paper names no letter (||w*||^2, the slopes of the Figs. 3-4 gaps, the offsets of
Sec. 5.1.3), the definition is the statement that introduces the quantity.
"""
from verify.definitions import Definition

DEFINITIONS = (
    # the setting (Sec. 2)
    Definition("d", "the dimension of the feature vectors x in R^d", "Sec. 2"),
    Definition("C", "the number of context examples, C > 0 (the context size)", "Sec. 2"),
    Definition("X", "the context inputs X in R^{C x d}, row i = x_i^T, x_i ~ N(0, I_d)",
               "Sec. 2, eq. (1)"),
    Definition("y", "the context labels (bold y) in R^C, y_i = <w_hat, x_i> (no noise)",
               "Sec. 2, eq. (1)"),
    Definition("x_q", "the query input x_q in R^d, x_q ~ N(0, I_d)", "Sec. 2, eq. (2)"),
    Definition("y_q", "the initial guess y_q in R of the prediction for the query x_q (the "
                      "bottom-right entry of E)", "Sec. 2, eq. (2)"),
    Definition("w_star", "the prior mean w*: the task w_hat ~ N(w*, I_d)", "Sec. 2"),
    Definition("W_K", "the LSA's trainable key weights W^K in R^{(d+1) x (d+1)}",
               "Sec. 2, eq. (3)"),
    Definition("W_Q", "the LSA's trainable query weights W^Q in R^{(d+1) x (d+1)}",
               "Sec. 2, eq. (3)"),
    Definition("W_V", "the LSA's trainable value weights W^V in R^{(d+1) x (d+1)}",
               "Sec. 2, eq. (3)"),
    Definition("W_P", "the LSA's trainable projection weights W^P in R^{(d+1) x (d+1)}",
               "Sec. 2, eq. (3)"),
    # y_q-LSA and the GD construction (Sec. 4)
    Definition("eta", "the GD step size", "Sec. 4.1, eq. (7)"),
    Definition("w", "y_q-LSA's trainable vector w in R^d: the initial guess is y_q = w^T x_q",
               "Def. 3, eq. (11)"),
    Definition("w", "the weights of a linear predictor f(x_q) = w^T x_q (the least-squares "
                    "variable; one GD step from w* gives eq. (9))", "Sec. 4.1, after eq. (9)",
               claims=("xie2025.eq9",)),
    Definition("w", "w = w_hat - w*, the task's deviation from the prior mean (~ N(0, I_d))",
               "App. B.3 (proof of Thm. 4)", claims=("xie2025.thm4",)),
    # the LTB construction (App. B.2, Lemma 3)
    Definition("W_1", "the LTB's first MLP matrix, set to [[I_d, w], [w^T, c]]",
               "App. B.2, eqs. (30)-(31)"),
    Definition("W_3", "[[I_d, 0], [w^T, 0]] in R^{(d+1) x (d+1)}, with W_3 E = E_w",
               "App. B.2 (proof of Lemma 3)"),
    Definition("c", "the corner of W_1, any scalar c != ||w||^2 (W_1 is then invertible)",
               "App. B.2, eq. (31)"),
    # the multi-head stationary-point analysis (App. A.2-A.4)
    Definition("e", "the standard basis vector e_i of R^d (1 at position i, 0 elsewhere)",
               "App. A.2, eq. (21)"),
    Definition("w_i", "the i-th coordinate w*[i] of the prior mean", "App. A.2, eq. (21)"),
    Definition("M_mn", "entry (m, n) of M = [[I_d, w*], [w*^T, ||w*||^2 + d]] = E[z_1 z_1^T]",
               "App. A.2, eqs. (22)-(23)"),
    Definition("M_pq", "entry (p, q) of M = [[I_d, w*], [w*^T, ||w*||^2 + d]] = E[z_1 z_1^T]",
               "App. A.2, eqs. (22)-(23)"),
    Definition("T_mnpq", "the fourth moment E[z_1[m] z_1[n] z_1[p] z_1[q]] of one context token "
                         "z_1 = [x_1; y_1]", "App. A.3, after eq. (27)"),
    Definition("u_x", "the vector u in R^d (bold u): the first d entries of [u; u]",
               "App. A.4 (proof of Lemma 1)"),
    Definition("u", "the scalar u in R: the last entry of [u; u]", "App. A.4 (proof of Lemma 1)"),
    # the experiments (Sec. 5)
    Definition("s", "||w*||^2, the squared norm of the prior mean (the x-axis of Fig. 3(b))",
               "Sec. 5.1.2, Fig. 3"),
    Definition("kappa", "the slope of the Fig. 3 gap in ||w*||^2, independent of ||w*||^2 "
                        "and > 0 (the gap grows linearly with ||w*||^2)",
               "Sec. 5.1.2, Fig. 3 caption"),
    Definition("g2", "||y_q_guess||^2, the squared norm of the linear part of "
                     "y_q = x_q^T y_q_guess + y_q_bias", "Sec. 5.1.3"),
    Definition("beta", "y_q_bias, the offset of y_q = x_q^T y_q_guess + y_q_bias", "Sec. 5.1.3"),
    Definition("k_g", "the slope of the Fig. 4 gap in ||y_q_guess||^2, independent of "
                      "y_q_guess and > 0 (the gap is proportional to ||y_q_guess||^2)",
               "Sec. 5.1.3, Fig. 4"),
    Definition("k_b", "the slope of the Fig. 4 gap in y_q_bias^2, independent of y_q_bias "
                      "and > 0 (the gap is proportional to ||y_q_bias||^2)",
               "Sec. 5.1.3, Fig. 4"),
)
