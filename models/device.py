"""Device and precision choices: float64 on cpu and cuda by default (see ``runtime``), seeded draws
that work with a generator on either device."""
from __future__ import annotations

from dataclasses import dataclass

import torch


def randn(*size, generator: torch.Generator | None, dtype: torch.dtype | None = None,
          device: torch.device | str | None = None) -> torch.Tensor:
    """``torch.randn`` drawn on the generator's own device, then moved to ``device`` (cpu when
    None, as torch does): torch refuses a cuda generator for a cpu tensor and the reverse, so every
    seeded draw goes through here.  A cpu generator gives the same numbers on either device."""
    where = generator.device if generator is not None else device
    return torch.randn(*size, generator=generator, dtype=dtype, device=where).to(device or "cpu")


def randint(low: int, high: int, size: tuple, *, generator: torch.Generator | None,
            device: torch.device | str | None = None) -> torch.Tensor:
    """``torch.randint`` on the generator's own device, moved to ``device`` (see ``randn``)."""
    where = generator.device if generator is not None else device
    return torch.randint(low, high, size, generator=generator, device=where).to(device or "cpu")


class DeviceUnavailable(ValueError):
    """A device was asked for that this machine does not have."""


@dataclass(frozen=True)
class Runtime:
    device: torch.device
    dtype: torch.dtype

    @property
    def eps(self) -> float:
        return torch.finfo(self.dtype).eps

    def tolerance(self, float64: float, eps_multiple: float) -> float:
        """A check's tolerance: ``float64`` in float64, ``eps_multiple`` * eps in a lower
        precision (float32 L-BFGS ends ~1e-5 above an optimum, float64 ~1e-10)."""
        return float64 if self.dtype == torch.float64 else eps_multiple * self.eps

    def generator(self, seed: int) -> torch.Generator:
        """A cpu generator on every device: drawn through ``randn``, a seed is then the same
        starts and prompts on cpu and cuda.  (With a cuda generator the H200 drew other starts,
        and yang2024 Fig. 4's train tier, whose stalling depends on the start, gave another
        verdict than on cpu.)  Bulk sampling for speed (bench/train.py) makes its own."""
        return torch.Generator().manual_seed(int(seed))

    def data_generator(self, seed: int) -> torch.Generator:
        """A generator on the runtime's own device, for bulk data (prompts, tasks, Monte Carlo
        draws): drawn where the model runs, with no host copy.  On cpu it is ``generator`` (the
        same numbers); on cuda it is another stream, so a seed gives other prompts there than on
        cpu (the verdicts agree, the draws do not: tests/models/test_device.py).  Starts and
        anything a verdict depends on draw by draw stay on ``generator``."""
        if self.device.type == "cpu":
            return self.generator(seed)
        return torch.Generator(device=self.device).manual_seed(int(seed))

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
    """The device, in float64 unless ``dtype`` says otherwise, on cuda too.  The checks decide at
    relative tolerances of 1e-6 to 1e-10, and L-BFGS in float32 stops ~1e-5 above the optimum:
    on the H200 the train tiers of xie2025 Thm 2 and Thm 4 gave other verdicts in float32 than in
    float64.  The problems are small and an H200 runs float64 at half its float32 rate (vendor
    figures), so float32 is left to the benchmarks (``bench/train.py --dtype``); code that takes
    a lower precision derives its tolerances from ``Runtime.eps``."""
    return Runtime(resolve_device(name), torch.float64 if dtype is None else dtype)


class gpu_monitor:
    """Samples the GPU's utilisation (percent busy, from NVML through ``torch.cuda.utilization``
    or else ``nvidia-smi``) every ``interval`` seconds while the block runs, on cuda only;
    ``summary()`` gives the mean, the maximum, the sample count and the peak memory torch held.
    On cpu (or where neither source answers) it records nothing."""

    def __init__(self, device: str, interval: float = 0.2) -> None:
        try:
            self.device = runtime(device).device
        except DeviceUnavailable:
            self.device = torch.device("cpu")
        self.active = self.device.type == "cuda"
        self.interval = interval
        self.samples: list[float] = []
        self.source = ""

    def _read(self) -> float | None:
        import subprocess

        if self.source in ("", "nvml"):
            try:
                value = float(torch.cuda.utilization(self.device))
                self.source = "nvml"
                return value
            except Exception:  # noqa: BLE001 - pynvml missing: fall back to nvidia-smi
                if self.source == "nvml":
                    return None
        index = self.device.index if self.device.index is not None else torch.cuda.current_device()
        try:
            out = subprocess.run(["nvidia-smi", "--query-gpu=utilization.gpu", "--format=csv,"
                                  "noheader,nounits", "-i", str(index)], capture_output=True,
                                 text=True, timeout=5)
            value = float(out.stdout.strip().splitlines()[0])
        except Exception:  # noqa: BLE001 - no source: nothing recorded
            self.source = "none"
            return None
        self.source = "nvidia-smi"
        return value

    def _poll(self) -> None:
        while not self._stop.wait(self.interval):
            value = self._read()
            if value is None:
                return
            self.samples.append(value)

    def __enter__(self) -> "gpu_monitor":
        if self.active:
            import threading

            torch.cuda.reset_peak_memory_stats(self.device)
            self._stop = threading.Event()
            self._thread = threading.Thread(target=self._poll, daemon=True)
            self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        if self.active:
            self._stop.set()
            self._thread.join(timeout=10)

    def summary(self) -> dict:
        """The utilisation figures, for a tier's evidence (``{}`` off cuda)."""
        if not self.active:
            return {}
        out = {"gpu": torch.cuda.get_device_name(self.device), "source": self.source,
               "samples": len(self.samples), "interval_s": self.interval,
               "peak_memory_mib": round(torch.cuda.max_memory_allocated(self.device) / 2**20, 1)}
        if self.samples:
            out["utilisation_mean_percent"] = round(sum(self.samples) / len(self.samples), 1)
            out["utilisation_max_percent"] = max(self.samples)
        return out


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


def tf32_note(device: torch.device | str) -> str:
    """What ``tf32_products`` did, for a protocol line: "" on cpu."""
    return (" (training's matrix products on TF32 tensor cores, test losses in float32)"
            if torch.device(device).type == "cuda" else "")


class tf32_products:
    """float32 matrix products on TF32 tensor cores inside the block (``tf32=True``), or in full
    float32 (``tf32=False``), on cuda; the previous setting is restored after; no effect on cpu.

    TF32 rounds the factors of a float32 product to 10 mantissa bits (relative 2^-11, about
    5e-4) and accumulates in float32; vendor peak figures for an H100/H200 are about 495 TFLOPS
    dense against 67 in float32.  Safe where a check decides at tolerances far above 5e-4: the
    sampled-task training of yang2024's 4-layer encoder (Fig. 5, line 349), whose loss is a
    Monte Carlo estimate over a batch of 256 tasks and whose criteria are loss ratios (25% of an
    excess) or confidence intervals over 1000 test prompts; its test losses are evaluated in full
    float32 all the same.  Not used by the float64 tiers (every exact-loss and L-BFGS run),
    which TF32 does not touch."""

    def __init__(self, device: torch.device | str, tf32: bool = True) -> None:
        self.active = torch.device(device).type == "cuda"
        self.tf32 = tf32

    def __enter__(self):
        if self.active:
            self.saved = _matmul_tf32()
            _matmul_tf32(self.tf32)
        return self

    def __exit__(self, *exc) -> None:
        if self.active:
            _matmul_tf32(self.saved)


def _matmul_tf32(value=None):
    """Read (no ``value``) or set cuBLAS's float32 precision, through the setting this torch has:
    ``fp32_precision`` ("tf32" / "ieee", torch >= 2.9, where reading the legacy ``allow_tf32``
    after setting the new one raises) or else ``allow_tf32``.  Returns the setting as it was."""
    m = torch.backends.cuda.matmul
    if hasattr(m, "fp32_precision"):
        old = m.fp32_precision
        if value is not None:
            m.fp32_precision = value if isinstance(value, str) else ("tf32" if value else "ieee")
        return old
    old = m.allow_tf32
    if value is not None:
        m.allow_tf32 = bool(value == "tf32") if isinstance(value, str) else bool(value)
    return old
