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
    # the symbols of the claims on the proofs' intermediate steps (App. A, B)
    Definition("H", "the number of heads H of multi-head LSA", "Sec. 3, eq. (6)"),
    Definition("O_1", "the first (d+1) x (d+1) block of the output projection W^O = [O_1, O_2] "
                      "of two concatenated heads (columns as tokens: W^O [head_1; head_2])",
               "Sec. 3, after eq. (6)"),
    Definition("O_2", "the second (d+1) x (d+1) block of W^O = [O_1, O_2]",
               "Sec. 3, after eq. (6)"),
    Definition("R_d1", "the infimum of the ICL risk over F_(d+1)-LSA, the (d+1)-head class",
               "Thm. 1"),
    Definition("G", "G = (1/C) sum_i z_i z_i^T = (1/C) E W^M E^T, z_i = [x_i; y_i] (symmetric)",
               "App. A.2"),
    Definition("b", "b_h in R^{d+1}, the last row of W^P_h W^V_h (of the single head in App. B)",
               "App. A.1, A.2"),
    Definition("a", "a column a_i^h in R^{d+1} of A_h = (W^K_h)^T W^Q_h", "App. A.1, A.2"),
    Definition("M", "M = E[z_1 z_1^T] = E[G] = [[I_d, w*], [w*^T, ||w*||^2 + d]]",
               "App. A.2, eq. (22)"),
    Definition("M_i", "M_i = sum_h b_h (a_i^h)^T in R^{(d+1) x (d+1)}, i <= d", "App. A.1, A.2"),
    Definition("M_last", "M_{d+1} = sum_h b_h (a_{d+1}^h)^T, the matrix of the query guess y_q",
               "App. A.2, eq. (17)"),
    Definition("w_hat", "the task vector w_hat ~ N(w*, I_d), y_i = w_hat^T x_i", "Sec. 2, App. A.2"),
    Definition("w_hat_i", "w_hat[i], the i-th coordinate of the task vector", "App. A.2, eq. (17)"),
    Definition("EGMG", "E[<G, M_i> G] for the matrix M_i differentiated (M_{d+1} in eq. (20))",
               "App. A.2, eqs. (19), (24)"),
    Definition("EwG", "E[w_hat[i] G]", "App. A.2, eqs. (19), (21)"),
    Definition("N_i", "the paper's N = [[0, e_i], [e_i^T, 2 w*[i]]] (N_i here: N names a size)",
               "App. A.2, after eq. (25)"),
    Definition("Delta_mnpq", "Delta_mnpq = T_mnpq - M_mn M_pq", "App. A.3, eq. (28)"),
    # App. B.3 (proof of Thm. 4): y_q-LSA with one head (b, A) and the trainable vector v
    Definition("v", "the trainable vector v of y_q-LSA (Def. 3's w): y_q = v^T x_q", "App. B.3"),
    Definition("v_j", "v[j], the j-th coordinate of v", "App. B.3"),
    Definition("w_hat_j", "w_hat[j], the j-th coordinate of the task vector", "App. B.3"),
    Definition("A", "A = (W^K)^T W^Q = [a_1, ..., a_{d+1}] of the single head", "App. B.3"),
    Definition("a_j", "a_j = A[:, j], the j-th column of A = (W^K)^T W^Q, j <= d", "App. B.3"),
    Definition("a_last", "a_{d+1}, the last column of A = (W^K)^T W^Q", "App. B.3"),
    Definition("A_d", "A_{:d} = [a_1, ..., a_d], the first d columns of A", "App. B.3"),
    Definition("z_q", "z_{C+1} = [x_q; y_q], the query token", "App. A.2"),
    Definition("w", "w = w_hat - w*, the task's deviation from the prior mean (~ N(0, I_d))",
               "App. B.3 (proof of Thm. 4)",
               claims=("xie2025.thm4_moments", "xie2025.eq_b3_case_sum")),
    Definition("w_j", "w[j] = e_j^T w, the j-th coordinate of w", "App. B.3"),
    Definition("E_tGb", "E[t_j G^T b] at App. B.3's point", "App. B.3"),
    Definition("E_t", "E[t_j] at App. B.3's point", "App. B.3"),
    Definition("E_tbGa", "E[t_j b^T G a_j] at App. B.3's point", "App. B.3"),
    Definition("E_tbGalast", "E[t_j b^T G a_{d+1}] at App. B.3's point", "App. B.3"),
)
