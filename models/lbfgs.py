"""torch's L-BFGS with strong-Wolfe line search, its two-loop recursion kept on the device.

``torch.optim.LBFGS`` passes each step of its two-loop recursion as a number
(``q.add_(y, alpha=-al[i])``), which reads a scalar back from the device: two read-backs per stored
pair per iteration, a hundred per iteration at a history of 50 (18,656 read-backs in ahn2023
Fig. 1's ten fixed-batch steps at the quick budget). ``DeviceLBFGS`` is the same algorithm, the
same state and the same stopping tests, with those products as tensor operations
(``addcmul_``, bit-identical to ``add_`` with ``alpha`` on the cpu); what is left reads back a
few times per iteration (the curvature test, the stopping tests, the line search's values).
"""
from __future__ import annotations

import torch
from torch.optim.lbfgs import _strong_wolfe


class DeviceLBFGS(torch.optim.LBFGS):
    """``torch.optim.LBFGS(..., line_search_fn="strong_wolfe")`` without the read-backs of the
    two-loop recursion (one param group, real parameters)."""

    def __init__(self, params, **kw) -> None:
        kw.setdefault("line_search_fn", "strong_wolfe")
        if kw["line_search_fn"] != "strong_wolfe":
            raise ValueError("DeviceLBFGS implements the strong-Wolfe line search only")
        super().__init__(params, **kw)

    @torch.no_grad()
    def step(self, closure):  # noqa: C901 - torch's step, one statement per line of it
        closure = torch.enable_grad()(closure)
        group = self.param_groups[0]
        lr, max_iter, max_eval = float(group["lr"]), group["max_iter"], group["max_eval"]
        tol_grad, tol_change = group["tolerance_grad"], group["tolerance_change"]
        history = group["history_size"]
        state = self.state[self._params[0]]
        state.setdefault("func_evals", 0)
        state.setdefault("n_iter", 0)

        orig_loss = closure()
        loss = float(orig_loss)
        evals = 1
        state["func_evals"] += 1
        flat_grad = self._gather_flat_grad()
        if flat_grad.abs().max() <= tol_grad:
            return orig_loss
        d, t = state.get("d"), state.get("t")
        old_dirs, old_stps, ro = state.get("old_dirs"), state.get("old_stps"), state.get("ro")
        H_diag, prev_flat_grad = state.get("H_diag"), state.get("prev_flat_grad")
        prev_loss = state.get("prev_loss")
        n_iter = 0
        while n_iter < max_iter:
            n_iter += 1
            state["n_iter"] += 1
            if state["n_iter"] == 1:
                d = flat_grad.neg()
                old_dirs, old_stps, ro, H_diag = [], [], [], 1
            else:
                y = flat_grad.sub(prev_flat_grad)
                s = d.mul(t)
                ys = y.dot(s)
                if ys > 1e-10:
                    if len(old_dirs) == history:
                        old_dirs.pop(0)
                        old_stps.pop(0)
                        ro.pop(0)
                    old_dirs.append(y)
                    old_stps.append(s)
                    ro.append(1.0 / ys)
                    H_diag = ys / y.dot(y)
                al = [None] * len(old_dirs)
                q = flat_grad.neg()
                for i in range(len(old_dirs) - 1, -1, -1):
                    al[i] = old_stps[i].dot(q) * ro[i]
                    q.addcmul_(old_dirs[i], al[i], value=-1)
                d = r = torch.mul(q, H_diag)
                for i in range(len(old_dirs)):
                    be_i = old_dirs[i].dot(r) * ro[i]
                    r.addcmul_(old_stps[i], al[i] - be_i)
            if prev_flat_grad is None:
                prev_flat_grad = flat_grad.clone(memory_format=torch.contiguous_format)
            else:
                prev_flat_grad.copy_(flat_grad)
            prev_loss = loss
            t = min(1.0, 1.0 / flat_grad.abs().sum()) * lr if state["n_iter"] == 1 else lr
            gtd = flat_grad.dot(d)
            if gtd > -tol_change:
                break
            x_init = self._clone_param()
            loss, flat_grad, t, ls_evals = _strong_wolfe(
                lambda x, step, direction: self._directional_evaluate(closure, x, step, direction),
                x_init, t, d, loss, flat_grad, gtd, max_ls=max_eval - evals)
            self._add_grad(t, d)
            opt_cond = flat_grad.abs().max() <= tol_grad
            evals += ls_evals
            state["func_evals"] += ls_evals
            if n_iter == max_iter or evals >= max_eval or opt_cond:
                break
            if d.mul(t).abs().max() <= tol_change or abs(loss - prev_loss) < tol_change:
                break
        state.update(d=d, t=t, old_dirs=old_dirs, old_stps=old_stps, ro=ro, H_diag=H_diag,
                     prev_flat_grad=prev_flat_grad, prev_loss=prev_loss)
        return orig_loss
