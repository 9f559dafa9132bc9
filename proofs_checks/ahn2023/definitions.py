"""ahn2023's definitions of the symbols its claims' formulas use, with where the paper makes them.

The paper writes X twice: Sec. 3 stacks all n + 1 tokens as the rows of X in R^{(n+1) x d};
Sec. 5.2 writes X = [x^(1) ... x^(n)] in R^{d x n} for the in-context covariates alone.  Lemma 2's
gradient is written with the second, so that claim carries it as a local definition.
"""
from verify.definitions import Definition

DEFINITIONS = (
    Definition("n", "the number of in-context examples (x^(i), y^(i)), i = 1..n", "Sec. 3, eq. (1)"),
    Definition("d", "the dimension of the covariates x^(i) in R^d", "Sec. 3, eq. (1)"),
    Definition("x_q", "the query x^(n+1), the last column of Z_0 (its label replaced by 0)",
               "Sec. 3, eq. (1)"),
    Definition("w_star", "the task vector w*, y^(i) = <w*, x^(i)>; w* ~ N(0, I_d) (Sec. 3), "
                         "N(0, Sigma^{-1}) in Thms. 4-5", "Sec. 3"),
    Definition("X", "the token matrix in R^{(n+1) x d} whose row i is x^(i)", "Sec. 3"),
    Definition("X", "X = [x^(1) ... x^(n)] in R^{d x n}, the in-context covariates",
               "Sec. 5.2 (before Thm. 4)", claims=("ahn2023.lemma2",)),
    Definition("Sigma", "the covariance of the covariates, x^(i) ~ N(0, Sigma)",
               "Thm. 1 (Sigma = U Lambda U^T); Thms. 4-5"),
    Definition("U", "the orthogonal eigenvector matrix of Sigma = U Lambda U^T", "Thm. 1"),
    Definition("Lambda", "diag(lambda_1, ..., lambda_d), the eigenvalues of Sigma = U Lambda U^T",
               "Thm. 1"),
    Definition("lambda_j", "the j-th diagonal entry of Lambda, x^(i) ~ N(0, Lambda)", "Lemma 7"),
    Definition("p_1", "sum_k lambda_k = tr Lambda (the paper writes the sum; p_1 names it)",
               "Lemma 7"),
    Definition("gamma", "the re-scaling factor: b <- gamma b, A <- gamma^{-1} A", "Thm. 1"),
    Definition("A", "the layer's preconditioner A_i of the sparse parameters (9)",
               "eq. (9), Lemma 2"),
    Definition("w", "the preconditioned GD iterate w_i^gd", "eq. (11), Lemma 2"),
    Definition("grad", "nabla R_{w*}(w), the gradient at w of the least-squares loss "
                       "R_{w*}(w) = (1/2n) sum_i (w^T x_i - w*^T x_i)^2", "eq. (10)"),
    # --- symbols of the remarks (Secs. 1-7) and of the proof of Thm. 1 (App. A) ---
    Definition("k", "the number of layers: the prediction reads Z_k (Sec. 3 D)",
               "Sec. 3 D, eq. (5)"),
    Definition("M", "the mask M = diag(I_n, 0) in R^{(n+1) x (n+1)}", "eq. (2)"),
    Definition("M", "the matrix whose distance to the scaled identities Dist(M, I) measures",
               "Sec. 5.3", claims=("ahn2023.fig1_dist",)),
    Definition("B", "the top-left block B_i of P_i = [[B_i, 0], [0, 1]]", "eq. (13)"),
    Definition("A", "the first d columns of Q = [A 0], A in R^{(d+1) x d}", "eq. (7)",
               claims=("ahn2023.thm1_rotation",)),
    Definition("a_k", "the scale of A_k = a_k Sigma^{-1} on S", "Thm. 5"),
    Definition("b_k", "the scale of B_k = b_k I on S", "Thm. 5"),
    Definition("e", "the error [Z_0 + Attn_{P,Q}(Z_0)/n]_{d+1,n+1} + w*^T x^(n+1) inside the "
                    "expectation of (6)", "eq. (6)"),
    Definition("C_z", "C = (1/n) sum_{i<=n} z^(i) z^(i)T, the second moment of the in-context "
                    "tokens", "App. A.1, eq. (15)"),
    Definition("b", "the last row of P as a column, b in R^{d+1} (P = [0; b^T])", "eq. (7)"),
    Definition("a", "a column a_j of A = [a_1 ... a_d] in R^{(d+1) x d}", "App. A.2, Step 1"),
    Definition("w_j", "w*[j], the j-th entry of w*", "App. A.2, Step 1"),
    Definition("x", "a covariate x^(i) in R^d", "Sec. 3, eq. (1)"),
    Definition("y", "the label y^(i) = <w*, x^(i)> of a covariate", "Sec. 3, eq. (1)"),
    Definition("u", "e_j, the j-th coordinate vector of R^d", "App. A.2"),
    Definition("X", "X = [x^(1) ... x^(n)] in R^{d x n}, the in-context covariates",
               "Sec. 5.2 (before Thm. 4)",
               claims=("ahn2023.eq17_inner", "ahn2023.thm4_hessian", "ahn2023.thm4_newton")),
    Definition("X", "the argument X in R^{(d+1) x (d+1)} of f_j(X) = E[<C, X> + w*[j]]^2",
               "Lemmas 6, 7", claims=("ahn2023.lemma6_convex", "ahn2023.lemma6_unique")),
    Definition("X", "X_k, the first d rows of Z_k (the covariates, query column included), "
                    "d x (n+1)", "Sec. 6.1, observation 1", claims=("ahn2023.fig4_update",)),
    Definition("W", "the distortion matrix: x^(i) = W xbar^(i), Sigma = W W^T", "Sec. 5.2"),
    Definition("w_bar", "the latent task vector wbar* ~ N(0, I), y^(i) = <xbar^(i), wbar*>",
               "Sec. 5.2"),
)

# App. B and C (the proofs of Thms. 3-5 and Lemma 2): the symbols their displayed steps use
_PROOF_U_CLAIMS = ("ahn2023.eq27", "ahn2023.eq28", "ahn2023.eq36", "ahn2023.eq_b3_step4")
DEFINITIONS += (
    Definition("X_0", "the first d rows of Zbar_0: X_0 = [x^(1) ... x^(n+1)] in R^{d x (n+1)}",
               "App. B.2 (before eq. (22)); App. B.3"),
    Definition("X_i", "the first d rows of Z_i (the tokens entering layer i), in R^{d x (n+1)}",
               "App. B.2 eq. (22); B.3 eq. (31); C.1 eq. (54)"),
    Definition("Y_i", "the (d+1)-th row of Z_i (the labels entering layer i), in R^{1 x (n+1)}",
               "App. B.2 eq. (22); B.3 eq. (31); C.1 eq. (54)"),
    Definition("A_0", "the first layer's block A_0 of the two-layer model (9)", "Thm. 3; App. B.1"),
    Definition("A_1", "the second layer's block A_1 of the two-layer model (9)", "Thm. 3; App. B.1"),
    Definition("U", "a uniformly random (Haar) orthogonal d x d matrix",
               "App. B.2 Step 1 (and B.3 Step 1)", claims=_PROOF_U_CLAIMS),
    Definition("U_Sigma", "U_Sigma = Sigma^{1/2} U Sigma^{-1/2} for the random orthogonal U",
               "App. B.2 Step 1 (before eq. (28))"),
    Definition("G", "the d x (n+1) matrix with Y_{k+1} = w*^T G: "
                    "G = X_0 prod_i (I + M X_i^T A_i X_i)", "App. B.2 Step 1; B.3 Step 1; B.4"),
    Definition("dG", "the derivative d/dt G at t = 0 along the perturbed weight",
               "App. B.2 eqs. (28), (30); B.3 eqs. (38), (45), (50)"),
    Definition("dX", "the derivative d/dt X_i at t = 0 along the perturbed weight",
               "App. B.3 eqs. (40), (41), (47), (48)"),
    Definition("C_j", "the direction C of the perturbed weight, A_j + tC or B_j + tC",
               "App. B.3 eqs. (41), (48)"),
    Definition("R_j", "the direction R_j in R^{d x d} of the perturbation A_j + t R_j",
               "App. B.2 Step 1, eq. (27)"),
    Definition("S_j", "the direction S_j in R^{d x d} of the perturbation B_j + t S_j",
               "App. B.3 Step 1, eq. (37)"),
    Definition("G_lt", "the product prod_{i<j} (I + M X_i^T A_i X_i) of G's factors before j",
               "App. B.3 eq. (52)"),
    Definition("G_gt", "the product prod_{i>j} (I + M X_i^T A_i X_i) of G's factors after j",
               "App. B.3 eq. (52)"),
    Definition("grad_A", "the full-matrix gradient nabla_{A_i} f at the current point",
               "App. B.2 eq. (26); B.3 eq. (35)"),
    Definition("grad_B", "the full-matrix gradient nabla_{B_i} f at the current point",
               "App. B.3 eq. (35)"),
    Definition("Xbar", "Xbar = [x^(1) ... x^(n)] in R^{d x n}, the in-context covariates",
               "App. C.2 (before eq. (63))"),
    Definition("Ybar", "the row [y_l^(1) ... y_l^(n)] of the context labels after l layers",
               "App. C.2 (before eq. (63))"),
    Definition("Ybar_0", "the row [y^(1) ... y^(n)] of the initial context labels",
               "App. C.2 (before eq. (63))"),
    Definition("y_q", "y_l^(n+1), the query label after l layers", "App. C.2 eq. (58)"),
    Definition("x_i", "the covariate x^(i) of example i (i <= n + 1 in (60)), in R^d",
               "App. C.2 eqs. (57), (60)"),
    Definition("y_i", "y_l^(i), the label of example i after l layers (y^(i) at l = 0)",
               "App. C.2 eqs. (57), (60)"),
    Definition("theta", "theta_l with g(x, y, l) = <theta_l, x> + y", "App. C.2 eq. (59)"),
)
