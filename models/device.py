"""Device and precision choices: cpu in float64; cuda in float32 with tolerances from its epsilon."""
from __future__ import annotations

from dataclasses import dataclass

import torch


class DeviceUnavailable(ValueError):
    """A device was asked for that this machine does not have."""


@dataclass(frozen=True)
class Runtime:
    device: torch.device
    dtype: torch.dtype

    @property
    def eps(self) -> float:
        return torch.finfo(self.dtype).eps

    def generator(self, seed: int) -> torch.Generator:
        g = torch.Generator(device=self.device)
        g.manual_seed(int(seed))
        return g

    def describe(self) -> dict:
        out = {"device": str(self.device), "dtype": str(self.dtype).replace("torch.", "")}
        if self.device.type == "cuda":
            out["gpu"] = torch.cuda.get_device_name(self.device)
        return out


def resolve_device(name: str = "auto") -> torch.device:
    """``auto`` picks cuda when a GPU is visible; ``cuda`` without one raises DeviceUnavailable."""
    if name == "auto":
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    if name == "cpu":
        return torch.device("cpu")
    if name == "cuda":
        if not torch.cuda.is_available():
            raise DeviceUnavailable("--device cuda was asked for, but no CUDA GPU is visible to torch")
        return torch.device("cuda")
    raise DeviceUnavailable(f"unknown device {name!r} (use auto, cpu or cuda)")


def runtime(name: str = "auto", dtype: torch.dtype | None = None) -> Runtime:
    device = resolve_device(name)
    if dtype is None:
        dtype = torch.float64 if device.type == "cpu" else torch.float32
    return Runtime(device, dtype)


class cpu_threads:
    """Run torch on one cpu thread inside the block (restored after): on a shared machine the
    tiny batched matrix products of the forward pass run ~10x faster than with contended
    threads.  No effect on cuda."""

    def __init__(self, device: str) -> None:
        try:
            self.active = runtime(device).device.type == "cpu"
        except DeviceUnavailable:  # reported by the check that asks for the device
            self.active = False

    def __enter__(self):
        if self.active:
            self.saved = torch.get_num_threads()
            torch.set_num_threads(1)
        return self

    def __exit__(self, *exc) -> None:
        if self.active:
            torch.set_num_threads(self.saved)
