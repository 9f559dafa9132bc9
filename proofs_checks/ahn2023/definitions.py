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
)
