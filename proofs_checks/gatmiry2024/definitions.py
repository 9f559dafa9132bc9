"""gatmiry2024: the paper's own definitions of the symbols its claims' formulas use.

One ``Definition`` per formula symbol: what the paper defines it to be, and where.  Local
definitions (``claims=``) apply where the paper redefines a letter for one statement: delta in
Lemmas A.5 and A.7, the eigenvalues lambda of Lemmas 4.3, A.5 and A.7, epsilon of Lemmas A.9 and
A.10, and w, which Prop. 3.1 uses for the gradient-descent weight rather than the task vector w*.
Formula symbols with no counterpart letter in the paper (``A_half``, ``XXt``, ``s_min``, ...)
name the paper's object they stand for.
"""
from __future__ import annotations

from verify.definitions import Definition

_P = "gatmiry2024."
# the lemmas whose lambda are the eigenvalues of A^{1/2} Sigma* A^{1/2}
_LAMBDA_A = (("lemma4_3", "Lemma 4.3"), ("lemma_a7", "Lemma A.7"))

DEFINITIONS = (
    # sizes
    Definition("n", "the number of in-context examples (x_i, y_i) of an instance", "Sec. 3.2"),
    Definition("d", "the dimension of the inputs x_i (X is d x n)", "Sec. 3.2"),
    Definition("L", "the number of loops of the looped transformer (layers sharing Q, P)",
               "Sec. 3.4, eq. (3)"),
    # the instance
    Definition("Sigma_star", "the population covariance: x_i ~ N(0, Sigma*), w* ~ N(0, "
               "Sigma*^{-1})", "Sec. 3.2"),
    Definition("Sigma_star_half", "the square root Sigma*^{1/2} of the population covariance "
               "Sigma*", "Sec. 3.2"),
    Definition("Sigma_star_half_inv", "the inverse square root Sigma*^{-1/2} of the population "
               "covariance Sigma*", "Sec. 3.2"),
    Definition("X", "the data matrix [x_1, ..., x_n] (d x n)", "Sec. 3.2"),
    Definition("y", "the labels y = (y_1, ..., y_n), y_i = w*^T x_i", "Sec. 3.2"),
    Definition("x_q", "the query point, whose label w*^T x_q is to be predicted", "Sec. 3.2"),
    Definition("w", "the task vector w* ~ N(0, Sigma*^{-1}), y_i = w*^T x_i", "Sec. 3.2"),
    Definition("w", "the weight w of the least-squares loss l_2^2(w) and of the preconditioned "
               "GD iterates w_t (w_0 = 0)", "Sec. 3.2; proof of Prop. 3.1",
               claims=(_P + "prop3_1",)),
    Definition("grad", "the gradient grad_w l_2^2(w_t) of the least-squares loss at the iterate",
               "proof of Prop. 3.1"),
    Definition("Sigma", "the empirical (data) covariance (1/n) sum_i x_i x_i^T = X X^T / n",
               "Sec. 3.6; Lemma 4.1"),
    # the parameters
    Definition("A", "the preconditioner: the top-left d x d block of Q = [[A, 0], [0, 0]]",
               "Sec. 3.5"),
    Definition("A_half", "the square root A^{1/2} of the preconditioner A", "Sec. 3.5"),
    Definition("u", "the vector u in R^d of P = [[0, 0], [u^T, 1]]", "Sec. 3.5"),
    Definition("A0", "A^(0): the top-left block of the first layer's Q^(0) (layers without "
               "weight sharing)", "Thm. A.1, eq. (11)"),
    Definition("A1", "A^(1): the top-left block of the second layer's Q^(1) (layers without "
               "weight sharing)", "Thm. A.1, eq. (11)"),
    Definition("A2", "A^(2): the top-left block of the third layer's Q^(2) (layers without "
               "weight sharing)", "Thm. A.1, eq. (11)"),
    Definition("u0", "u^(0): the vector of the first layer's P^(0) = [[0, 0], [u^(0)T, 1]] "
               "(Lemma A.3 prints it d_0)", "Thm. A.1, eq. (11)"),
    Definition("u1", "u^(1): the vector of the second layer's P^(1) = [[0, 0], [u^(1)T, 1]] "
               "(Lemma A.3 prints it d_1)", "Thm. A.1, eq. (11)"),
    Definition("u2", "u^(2): the vector of the third layer's P^(2) = [[0, 0], [u^(2)T, 1]]",
               "Thm. A.1, eq. (11)"),
    Definition("loss", "the population loss L(A, u) at u = 0, L(A, 0)", "Sec. 3.5"),
    Definition("i", "the summation index over the loops, 0 <= i <= L - 1", "Cor. A.4"),
    Definition("j", "the index of the second copy of the sum over the loops in "
               "||sum_i v_i||^2 = sum_i sum_j v_i v_j^T, 0 <= j <= L - 1", "Cor. A.4"),
    # delta: Sec. 3.5; the remark after Thm. 3.2 and Lemma A.7 give others
    Definition("delta", "the accuracy parameter delta := (8 L d / sqrt(n))^{1/(2L)}", "Sec. 3.5"),
    Definition("delta", "delta = 4 k d / sqrt(n) (Lemma A.5 leaves it undefined; its proof ends "
               "with this value)", "remark after Thm. 3.2; proof of Lemma A.5",
               claims=(_P + "lemma_a5",)),
    Definition("delta", "delta with delta^k := 4 k d / sqrt(n)", "Lemma A.7",
               claims=(_P + "lemma_a7",)),
    # the moment lemmas
    Definition("k", "the power of the moment the lemma bounds (1 <= k <= 2L in Lemmas 4.2, 4.3)",
               "Lemma 4.2"),
    Definition("lambda_1", "the largest eigenvalue of Sigma~, the covariance of x~_i",
               "Lemma 4.2"),
    Definition("lambda_j", "the j-th largest eigenvalue of Sigma~, the covariance of x~_i",
               "Lemma 4.2"),
    Definition("lambda_1", "the largest eigenvalue of Sigma*", "Lemma A.5",
               claims=(_P + "lemma_a5",)),
    Definition("lambda_j", "the j-th largest eigenvalue of Sigma*", "Lemma A.5",
               claims=(_P + "lemma_a5",)),
    *(Definition("lambda_1", "the largest eigenvalue of A^{1/2} Sigma* A^{1/2}", where,
                 claims=(_P + cid,)) for cid, where in _LAMBDA_A),
    *(Definition("lambda_j", "the j-th largest eigenvalue of A^{1/2} Sigma* A^{1/2} (the "
                 "lemma's lambda_i)", where, claims=(_P + cid,)) for cid, where in _LAMBDA_A),
    # free scalars of single statements
    Definition("epsilon", "the loss level of the statement: epsilon > 4 delta and "
               "L(A, 0) <= epsilon^{2L} / 2", "Thm. 4.4"),
    Definition("epsilon", "the loss level of the statement: epsilon > 2 delta and "
               "L(A, 0) <= epsilon^{2L} - delta^{2L} (epsilon + 2)^{2L}", "Lemma A.9",
               claims=(_P + "lemma_a9",)),
    Definition("epsilon", "the level of the statement: 8 delta d^{3/(4L)} <= epsilon <= 1 and "
               "L(A, 0) >= epsilon^{2L} + d delta^{2L} (epsilon + 2)^{2L}", "Lemma A.10",
               claims=(_P + "lemma_a10",)),
    Definition("xi", "the target loss xi >= 2 (4 delta)^{2L} the gradient flow reaches",
               "Thm. 3.3; Thm. A.12"),
    # least squares (Sec. 3.2)
    Definition("kappa", "the condition number of the Hessian of l_2^2(w) (of X X^T): its largest "
               "over its smallest eigenvalue", "Sec. 3.2"),
    Definition("lambda_max", "the largest eigenvalue of the Hessian of l_2^2(w) (the smoothness "
               "constant of the loss)", "Sec. 3.2 (standard smooth convex analysis)"),
    # the pairings of the proof of Lemma A.2
    Definition("C_G", "C(G_p): the number of connected components (cycles) of the graph G_p of "
               "a pairing p of the 2k factors, on the nodes (1, 2), (3, 4), ..., (2k - 1, 2k)",
               "proof of Lemma A.2"),
    Definition("C_Gp", "C(G'_p): the number of connected components (cycles) of the graph G'_p "
               "of a pairing p, on the nodes (2, 3), ..., (2k - 2, 2k - 1), (1, 2k)",
               "proof of Lemma A.2"),
    Definition("r", "the number of self-loops of G_p (pairs (2i - 1, 2i) of p)",
               "proof of Lemma A.2"),
    Definition("s", "the summation index s = k - r of the chain (20)", "proof of Lemma A.2, (20)"),
    Definition("dfact_even", "(2m)!! = 2 4 ... 2m, m = k - r, as the proof writes C_{k-r}",
               "proof of Lemma A.2"),
    Definition("dfact_odd", "(2m - 1)!! = 1 3 ... (2m - 1), m = k - r", "proof of Lemma A.2"),
    # Gaussian identities in the proofs
    Definition("v", "a fixed vector v in R^d of the identities (17)", "proof of Lemma A.2, (17)"),
    Definition("alpha", "a fixed scalar alpha of the identities (17)", "proof of Lemma A.2, (17)"),
    Definition("M_prod", "the product prod_{i=0}^{L-1} (I - Sigma A^(i)) of the multi-layer "
               "model's residual", "proof of Lemma A.3"),
    Definition("y_t", "the label row y^(t)T = [Z^(t)]_{d+1,1:n} of the prompt after t layers "
               "(a column y^(t) here)", "proof of Thm. A.1"),
    # the gradient flow (remark after Thm. 3.4, proof of Thm. A.12)
    Definition("grad_sq", "||grad_A L(A, 0)||_F^2, the squared norm of the gradient of the loss",
               "remark after Thm. 3.4; proof of Thm. A.12"),
    Definition("t", "the time of the gradient flow dA/dt = -grad_A L(A(t), 0)",
               "Thm. 3.3; proof of Thm. A.12"),
    Definition("f0", "f(0) = L(A_0, 0), the loss at the start of the flow", "proof of Thm. A.12"),
    Definition("g", "the solution g(t) of the comparison ODE (29)", "proof of Thm. A.12, (29)"),
    Definition("c", "the constant c of the solution g(t) = (...)(t + c)^{-L/(L-1)} of (29)",
               "proof of Thm. A.12"),
    # proof steps of Thms. A.8, A.11 and Lemmas A.9, A.10 (their own lambda, epsilon)
    Definition("max_dev", "max_i |lambda_i - 1| over the eigenvalues lambda_i of "
               "A^{1/2} Sigma* A^{1/2}", "proof of Lemma A.10 (line 694)"),
    *(Definition("lambda_1", "the largest eigenvalue of A^{1/2} Sigma* A^{1/2}", where,
                 claims=(_P + cid,))
      for cid, where in (("lemma_a10_lambda1_step", "proof of Lemma A.10"),
                         ("lemma_a9_gradient_moment", "proof of Lemma A.9"))),
    Definition("lambda_j", "the j-th largest eigenvalue of A^{1/2} Sigma* A^{1/2}",
               "proof of Lemma A.9", claims=(_P + "lemma_a9_gradient_moment",)),
    Definition("epsilon", "the level of Lemma A.10: 8 delta d^{3/(4L)} <= epsilon <= 1",
               "proof of Lemma A.10", claims=(_P + "lemma_a10_lambda1_step",)),
    Definition("epsilon", "the level of Lemma A.9: epsilon > 2 delta and L(A, 0) <= "
               "epsilon^{2L} - delta^{2L} (epsilon + 2)^{2L}", "proof of Lemma A.9",
               claims=(_P + "lemma_a9_eigenvalue_step",)),
    Definition("epsilon", "the level the proof of Thm. A.11 feeds to Lemma A.10: epsilon > "
               "4 delta, L(A, 0) >= 2 epsilon^{2L}", "proof of Thm. A.11",
               claims=(_P + "thm_a11_epsilon_step", _P + "eq28")),
    # gradient_steps, gradient_chain: proofs of Lemmas A.5, A.9, A.10 and Thm. A.11
    Definition("c_star", "|c*|: the number of nodes of the cycle c* of G'_p that holds the node "
               "(1, 2k)", "proof of Lemma A.5"),
    Definition("l1", "the power l1 of the first factor in the expansion (25)",
               "proof of Lemma A.9, (25)"),
    Definition("l2", "the power l2 of the second factor in the expansion (25)",
               "proof of Lemma A.9, (25)"),
    Definition("lambda_i", "the i-th largest eigenvalue of A^{1/2} Sigma* A^{1/2}",
               "proof of Lemma A.10"),
    Definition("dev_sum", "sum_i (lambda_i - 1)^{4L-2} over the eigenvalues lambda_i of "
               "A^{1/2} Sigma* A^{1/2}", "proof of Lemma A.10, (27)"),
    Definition("i", "the summation index of the binomial expansion (21), 0 <= i <= k",
               "proof of Lemma A.7, (21)", claims=(_P + "eq21",)),
    Definition("i", "the power of the first factor (I - Sigma A)^i, 0 <= i <= 2L - 1",
               "proof of Lemma A.9, (25)", claims=(_P + "eq25",)),
    Definition("delta", "delta with delta^k := 4 k d / sqrt(n)", "proof of Lemma A.9 (line 644)",
               claims=(_P + "lemma_a9_gamma_step",)),
    *(Definition("lambda_1", "the largest eigenvalue of A^{1/2} Sigma* A^{1/2}", where,
                 claims=(_P + cid,))
      for cid, where in (("lemma_a9_gamma_step", "proof of Lemma A.9"),
                         ("eq27", "proof of Lemma A.10"),
                         ("lemma_a10_max_step", "proof of Lemma A.10"))),
    Definition("lambda_j", "the j-th largest eigenvalue of A^{1/2} Sigma* A^{1/2}",
               "proof of Lemma A.9", claims=(_P + "lemma_a9_gamma_step",)),
    Definition("epsilon", "the level of Lemma A.10: 8 delta d^{3/(4L)} <= epsilon <= 1 and "
               "L(A, 0) >= epsilon^{2L} + d delta^{2L} (epsilon + 2)^{2L}", "proof of Lemma A.10",
               claims=(_P + "eq27", _P + "lemma_a10_max_step")),
    Definition("epsilon", "the level epsilon = (L(A, 0) / 2)^{1/(2L)} the proof of Thm. A.11 "
               "feeds to (28)", "proof of Thm. A.11", claims=(_P + "thm_a11_final_step",)),
    # layer_steps: the layer update in the proof of Thm. A.1 (lines 356, 370)
    Definition("Z", "the layer's input Z^(t-1) = [[X, x_q], [y^(t-1)T, -y_q^(t-1)]] "
               "((d+1) x (n+1))", "eqs. (1)-(3); proof of Thm. A.1"),
    Definition("P", "the layer's P^(t) = [[0, 0], [u^(t)T, 1]] ((d+1) x (d+1))",
               "Sec. 3.5; eq. (11)"),
    Definition("Q", "the layer's Q^(t) = [[A^(t), 0], [0, 0]] ((d+1) x (d+1))",
               "Sec. 3.5; eq. (11)"),
    Definition("M", "the mask M = [[I_n, 0], [0, 0]] ((n+1) x (n+1))", "eq. (2)"),
    Definition("yq_t", "y_q^(t): minus the query entry of the prompt after t layers, "
               "[Z^(t)]_{d+1,n+1} = -y_q^(t) (1 x 1)", "proof of Thm. A.1"),
    # isserlis_steps: the proof of Lemma A.5 (line 513)
    *(Definition(f"m{j}", f"the number of cycles of G'_p other than c* with {j} node"
                 f"{'s' if j > 1 else ''}", "proof of Lemma A.5") for j in (1, 2, 3)),
    *(Definition(f"p{j}", f"tr(Sigma*^{j}), the trace a cycle of G'_p with {j} node"
                 f"{'s' if j > 1 else ''} contributes", "proof of Lemma A.5") for j in (1, 2, 3)),
    # out of distribution
    Definition("zeta", "the parameter 0 < zeta < 1 of the window Sigma^out <= (2 - zeta) Sigma*",
               "Thm. 4.5, eq. (10); Thm. A.13, eq. (30)"),
    Definition("XXt", "X^out X^out^T, the Gram matrix of the OOD inputs (printed as Sigma^out)",
               "Thm. 4.5"),
    Definition("s_min", "the smallest eigenvalue of the OOD input covariance Sigma^out (at "
               "Sigma* = I)", "Thm. 4.5, eq. (10)"),
    Definition("s_max", "the largest eigenvalue of the OOD input covariance Sigma^out (at "
               "Sigma* = I)", "Thm. 4.5, eq. (10)"),
    Definition("xq_norm2", "||x_q^out||^2_{Sigma*} = x_q^out^T Sigma* x_q^out, for the OOD query "
               "x_q^out", "Thm. 4.5"),
    Definition("w_norm2", "||w^{out,*}||^2_{Sigma*^{-1}} = w^{out,*T} Sigma*^{-1} w^{out,*}, for "
               "the OOD task vector w^{out,*}", "Thm. 4.5"),
    Definition("xq_norm2_inv", "||x_q^out||^2_{Sigma*^{-1}} = x_q^out^T Sigma*^{-1} x_q^out, for "
               "the OOD query x_q^out (the norm the proof's x_q^T A^opt x_q is close to)",
               "Thm. 4.5; proof of Thm. A.13"),
    Definition("w_norm2_sig", "||w^{out,*}||^2_{Sigma*} = w^{out,*T} Sigma* w^{out,*}, for the OOD "
               "task vector w^{out,*} (the norm the proof's w^T A^opt^{-1} w is close to)",
               "Thm. 4.5; proof of Thm. A.13"),
    *(Definition(name, f"the {which} eigenvalue of Sigma*^{{-1}} Sigma^out (of Sigma*^{{-1/2}} "
                 f"Sigma^out Sigma*^{{-1/2}}): the window (10) / (30) is s_min >= its lower end "
                 f"and s_max <= 2 - zeta", "Thm. 4.5, eq. (10); Thm. A.13, eq. (30)",
                 claims=(_P + "thm4_5", _P + "thm_a13", _P + "eq31"))
      for name, which in (("s_min", "smallest"), ("s_max", "largest"))),
)
