"""Progress bars for training runs: shown on a terminal after two seconds, silent otherwise."""
from __future__ import annotations

import sys
from typing import Callable

from tqdm import tqdm


class Progress:
    """A tqdm bar fed by the trainers' ``progress(step, loss)`` callback."""

    def __init__(self, total: int, desc: str, enabled: bool) -> None:
        self.bar = tqdm(total=total, desc=desc, file=sys.stderr, leave=False, delay=2.0,
                        disable=not enabled, dynamic_ncols=True)

    def callback(self) -> Callable:
        def update(step: int, loss) -> None:
            if self.bar.disable:  # reading the loss would wait for a GPU, for nothing
                return
            self.bar.n = step
            try:
                value = float(loss.min()) if hasattr(loss, "min") else float(loss)
                self.bar.set_postfix_str(f"loss {value:.4g}", refresh=False)
            except (TypeError, ValueError):
                pass
            self.bar.refresh()

        return update

    def close(self) -> None:
        self.bar.close()

    def __enter__(self) -> "Progress":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
