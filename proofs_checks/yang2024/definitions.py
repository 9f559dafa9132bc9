"""yang2024: the paper's own definitions of the symbols its claims' formulas use.

One ``Definition`` per formula symbol of ``proofs_checks.yang2024``: what the symbol is as the
paper defines it, and where (section, equation, lemma).  Symbols that are the checks' shorthand
for an expression of a statement (``Zbar_norm`` for ||Zbar||_2, ``dQ_h`` for ||Q_h - Q_h'||_F,
``excess`` for l(xi) - L*) are defined by that expression, at the statement that introduces it;
``J`` and ``omega_k`` are the checks' names for blocks the paper writes out (eqs. (34), (8)).
The registry binds every yang2024 claim to these when it loads the paper.
"""
from __future__ import annotations

from verify.definitions import Definition

DEFINITIONS = (
    # --- Sec. 2: the setting ------------------------------------------------------------------
    Definition("d", "token dimension: every token v_k lies in R^d", "Sec. 2; Table 2"),
    Definition("m", "number of basic tasks: the representation f = (f_1, ..., f_m)^T maps R^d to R^m",
               "Sec. 2; Table 2"),
    Definition("K", "total number of tokens: the dictionary is {v_1, ..., v_K} (unit-norm, distinct)",
               "Sec. 2; Table 2"),
    Definition("N", "number of examples in each prompt: the prompt gives the first N tokens and their "
               "labels", "Sec. 2, eq. (2); Table 2"),
    Definition("H", "number of attention heads", "Sec. 2, eqs. (5)-(6); Table 2"),
    Definition("tau", "noise level: y_k = lambda^T(f(v_k) + eps_k) with eps_k ~ N(0, tau I_m) i.i.d.",
               "Sec. 2, eq. (1)"),
    Definition("lam", "the coefficient vector lambda in R^m of a task: y_k = lambda^T(f(v_k) + eps_k)",
               "Sec. 2, eq. (1)"),
    Definition("lam", "any lambda in R^m: the variable of the regressions (24)-(25), with the prompt "
               "labels y_i fixed and eps_i fresh noise", "Lemma 4, eq. (32); eq. (24)",
               claims=("yang2024.lemma4",)),
    Definition("v_j", "the j-th dictionary token v_j in R^d, ||v_j||_2 = 1 (a prompt token for j in [N])",
               "Sec. 2"),
    Definition("v_k", "the k-th dictionary token v_k in R^d, ||v_k||_2 = 1", "Sec. 2; Table 2"),
    Definition("V", "V = (v_1, ..., v_N) in R^{d x N}, the prompt tokens", "Sec. 2, eq. (3)"),
    Definition("y", "y = (y_1, ..., y_N)^T, the prompt labels", "Sec. 2, eq. (2)"),
    Definition("e_k", "the one-hot vector whose k-th entry is 1 (in R^N, k in [N], in eq. (33))",
               "Notation (Sec. 1); eq. (33)"),
    # --- the attention: eqs. (7)-(8), (13), (28), (35) ------------------------------------------
    Definition("omega_k", "(w_{1,k}, ..., w_{H,k})^T, so that sum_h w_{h,k} softmax(V^T Q_h v_k) = "
               "C_k omega_k", "eqs. (7a), (8)"),
    Definition("C_k", "C_k = softmax(V^T Q_1 v_k, ..., V^T Q_H v_k) in R^{N x H}, softmax column-wise",
               "eq. (13)"),
    Definition("s_k", "s_k^h = softmax(V^T Q_h v_k) in R^N", "App. A.2, eq. (28)"),
    Definition("s_jk", "s_{jk}^h, the j-th entry of s_k^h = softmax(V^T Q_h v_k)", "App. A.2, eq. (28)"),
    Definition("Ahat", "Ahat(theta) = (sum_h w_{h,1} s_1^h, ..., sum_h w_{h,K} s_K^h) in R^{N x K}",
               "App. B, eq. (35)"),
    Definition("Ahat_k", "ahat_k, the k-th column sum_h w_{h,k} s_k^h of Ahat(theta) (eq. (35))",
               "App. D.3, after eq. (75)"),
    # --- the representations: eqs. (12), (19), (34) ---------------------------------------------
    Definition("z_k", "z_k = f(v_k) = (f_1(v_k), ..., f_m(v_k))^T in R^m, k in [K]", "App. A.2"),
    Definition("Z", "Z = (f(v_1), ..., f(v_N)) = (z_1, ..., z_N) in R^{m x N}", "eq. (12)"),
    Definition("Zhat", "Zhat = (f(v_1), ..., f(v_K)) = (z_1, ..., z_K) = (Z, Z^Q) in R^{m x K}",
               "Sec. 3.3; App. B, after eq. (35)"),
    Definition("J", "(I_N, 0) in R^{N x K}, so that the block (m tau I_N, 0) of eq. (34) is m tau J",
               "eq. (34)"),
    Definition("A", "A = (Z^T Z + m tau I_N)^{-1} (Z^T Zhat + (m tau I_N, 0)) in R^{N x K}",
               "Sec. 3.3; App. B, eq. (34)"),
    Definition("Z_norm", "||Z||_2, Z = (f(v_1), ..., f(v_N)) of eq. (12)", "Thm. 2, eq. (21)"),
    Definition("Zbar_norm", "||Zbar||_2, Zbar = (Z^T Z + m tau I_N)^{1/2} in R^{N x N}", "eq. (12)"),
    Definition("fbar_max", "max_{i in [N]} ||zbar_i||_2, zbar_i the i-th column of "
               "Zbar = (Z^T Z + m tau I_N)^{1/2}", "eq. (12)"),
    Definition("ZtZhat_norm", "||Z^T Zhat||_2, Zhat = (f(v_1), ..., f(v_K))", "eq. (17)"),
    Definition("A_norm", "||A||_2, A of eq. (34)", "Lemma 9, eq. (53)"),
    # --- training: eqs. (10)-(17), Lemmas 6-10 --------------------------------------------------
    Definition("eta_Q", "learning rate of the Q_h in the GD (10)", "eq. (10)"),
    Definition("eta_w", "learning rate of the w_h in the GD (10)", "eq. (10)"),
    Definition("gamma", "gamma = sqrt(eta_w / eta_Q) (alpha_h = w_h / gamma); Thm. 1 takes any gamma "
               "satisfying (15)", "Lemma 6, eq. (39); eqs. (15)-(16)"),
    Definition("alpha", "a bound |alpha_{h,k}| <= alpha on alpha_{h,k} = w_{h,k} / gamma (39); "
               "Thm. 1's proof sets it by (44)", "Lemmas 7-10; eq. (44)"),
    Definition("excess", "l(xi) - L*: the reparametrised loss l(xi) = L(theta) (40) above the constant "
               "L* of Lemma 5", "Lemma 7, eq. (42)"),
    Definition("dQ_h", "||Q_h - Q_h'||_F for parameters theta, theta'", "Lemma 8, eq. (50)"),
    Definition("dQ", "(sum_h ||Q_h - Q_h'||_F^2)^{1/2} for parameters theta, theta'",
               "Lemma 8, eq. (51)"),
    Definition("dalpha_k", "||alpha_k - alpha_k'||_2, alpha_k = (alpha_{1,k}, ..., alpha_{H,k})^T",
               "Lemma 8, eq. (51)"),
    Definition("Delta_0", "Delta^(0) = L(theta^(0)) - inf_theta L, the initial function gap",
               "eq. (11)"),
    Definition("zeta_0", "min_{k in [K]} lambda_min(B_k^(0) B_k^(0)T), B_k^(0) = Zbar C_k^(0) (13)",
               "eq. (14)"),
    Definition("noise_var", "the variance of each entry of the label noise eps_k, as the sentence "
               "after (77) states it (eq. (1) defines eps_k ~ N(0, tau I_m))", "App. D.3, after eq. (77)"),
    Definition("beta", "the standard deviation of the Gaussian initialisation Q_h^(0)(i, j) ~ N(0, beta^2)",
               "Prop. 1"),
    Definition("vk_sq", "||v_k||_2^2 of the token v_k in q_h = Q_h v_k (1 for the unit-norm dictionary)",
               "App. D.1, eq. (71)"),
    # --- the proofs of Thm. 1 and Lemmas 7-10 (App. B, D.5) ------------------------------------
    Definition("Zbar", "Zbar = (Z^T Z + m tau I_N)^{1/2} in R^{N x N}, symmetric positive definite",
               "eq. (12)"),
    Definition("zbar_j", "the j-th column of Zbar = (Z^T Z + m tau I_N)^{1/2}", "eq. (12)"),
    Definition("z_j", "z_j = f(v_j) in R^m, the j-th column of Z (j in [N])", "App. A.2; eq. (12)"),
    Definition("B_k", "B_k = Zbar C_k in R^{N x H}, its h-th column b_k^h = Zbar s_k^h", "eq. (13)"),
    Definition("delta_k", "delta_k = Ahat_{:,k} - A_{:,k}, the k-th column of Ahat(theta) minus its "
               "optimum (eq. (33) with Z^T z_k; (37)-(38))", "eqs. (33), (38)"),
    Definition("alpha_hk", "alpha_{h,k} = w_{h,k} / gamma, the reparametrised value weight",
               "Lemma 6, eq. (39)"),
    Definition("L_star", "L* = inf_theta L(theta), the constant of Lemma 5's (36) (shown the infimum "
               "after (64))", "Lemma 5, eq. (36); App. B"),
    Definition("sigma", "sigma = zeta_0 gamma^2 / K, the constant of the PL inequality (49)", "eq. (44)"),
    Definition("L_smooth", "L, the smoothness constant of l(xi) (60) with which Thm. 1 takes eta_Q <= 1/L "
               "((16), (17)); the L of (63)-(64)", "Lemma 10, eq. (60); eqs. (16)-(17)"),
    Definition("x_norm", "||x||_2 of the vector x in 'for all x: ||x^T B_k^(t)||_2 >= ...' after (48)",
               "App. B, after eq. (48)"),
    Definition("l", "the number of vectors x_1, ..., x_l in Lemma 3's inequality (31)", "Lemma 3, eq. (31)"),
    # --- inference: Thm. 2 ----------------------------------------------------------------------
    Definition("B", "a bound on the inference-time coefficient vector: ||lambda||_2 <= B",
               "Assumption 4"),
    Definition("lam_sq", "||lambda||_2^2, lambda the coefficient vector of the inference-time prompt",
               "App. C, eq. (68)"),
    Definition("delta", "failure probability: (22) holds with probability at least 1 - delta, "
               "delta in (0, 1)", "Thm. 2"),
    Definition("epsilon", "target accuracy: (1/2K) ||yhat - yhat*||_2^2 <= epsilon", "Thm. 2, eq. (22)"),
)
