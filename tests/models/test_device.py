"""Seeded draws work with a generator on another device than the tensor (the cuda bug the H200
run found: a cuda generator for a cpu tensor, and the reverse, raise in torch)."""
import torch

from models.device import randint, randn, runtime


def test_draws_are_torch_draws_on_the_generators_device():
    got = randn(3, 4, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    want = torch.randn(3, 4, generator=torch.Generator().manual_seed(7), dtype=torch.float64)
    assert torch.equal(got, want)
    assert torch.equal(randint(0, 5, (6,), generator=torch.Generator().manual_seed(3)),
                       torch.randint(0, 5, (6,), generator=torch.Generator().manual_seed(3)))


def test_a_cpu_generator_serves_a_tensor_on_another_device():
    t = randn((2, 2), generator=torch.Generator().manual_seed(0), dtype=torch.float32,
              device="meta")
    assert t.device.type == "meta" and t.shape == (2, 2) and t.dtype == torch.float32


def test_checks_run_in_float64_on_every_device_unless_asked():
    assert runtime("cpu").dtype == torch.float64
    assert runtime("cpu", torch.float32).eps == torch.finfo(torch.float32).eps
    assert runtime("cpu").tolerance(1e-6, 1e3) == 1e-6
    assert runtime("cpu", torch.float32).tolerance(1e-6, 1e3) == 1e3 * torch.finfo(torch.float32).eps


def test_a_seed_is_one_stream_on_every_device():
    assert runtime("cpu").generator(5).device.type == "cpu"
    a = randn(4, generator=runtime("cpu").generator(5), dtype=torch.float64)
    b = randn(4, generator=runtime("cpu").generator(5), dtype=torch.float64, device="meta")
    assert a.shape == b.shape and b.device.type == "meta"


def test_no_seeded_draw_bypasses_the_helpers():
    """A ``torch.randn(..., generator=g)`` elsewhere would raise on cuda again whenever g and the
    tensor live on different devices (the first H200 run: 9 of the 22 train
    tiers at the quick budget, all 6 of ahn2023's at the paper budget)."""
    import ast
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2]
    found = []
    for folder in ("models", "proofs_checks", "verify", "moments", "bench"):
        for path in (root / folder).rglob("*.py"):
            if path.name == "device.py" and path.parent.name == "models":
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                        and isinstance(node.func.value, ast.Name) and node.func.value.id == "torch"
                        and node.func.attr in ("randn", "rand", "randint", "randperm", "normal")
                        and any(k.arg == "generator" for k in node.keywords)
                        and not any(k.arg == "device" and isinstance(k.value, ast.Attribute)
                                    and k.value.attr == "device"
                                    and ast.unparse(k.value.value) == ast.unparse(
                                        next(kk.value for kk in node.keywords
                                             if kk.arg == "generator"))
                                    for k in node.keywords)):
                    found.append(f"{path.relative_to(root)}:{node.lineno}")
    assert not found, found


def test_bulk_data_draws_where_the_model_runs():
    """``data_generator`` is the cpu generator on cpu (a seed is the same prompts as before) and
    a generator of the runtime's own device elsewhere (no host copy of the prompts)."""
    from models.device import gpu_monitor

    rt = runtime("cpu")
    a = randn(5, generator=rt.data_generator(3), dtype=torch.float64)
    assert torch.equal(a, randn(5, generator=rt.generator(3), dtype=torch.float64))
    if torch.cuda.is_available():
        g = runtime("cuda").data_generator(3)
        assert g.device.type == "cuda"
        assert randn(5, generator=g, dtype=torch.float64, device="cuda").device.type == "cuda"
    with gpu_monitor("cpu") as mon:
        pass
    assert not mon.active and mon.summary() == {}


def test_tf32_products_set_and_restore_cublas_precision_on_cuda_only():
    """TF32 for the float32 training of yang2024's encoder: set inside the block on cuda (the
    setting is a torch flag, readable without a GPU), restored after, nested full float32 for
    the test losses; nothing on cpu."""
    from models.device import _matmul_tf32, tf32_note, tf32_products

    before = _matmul_tf32()
    with tf32_products("cuda"):
        assert _matmul_tf32() in ("tf32", True)
        with tf32_products("cuda", False):
            assert _matmul_tf32() in ("ieee", False)
        assert _matmul_tf32() in ("tf32", True)
    assert _matmul_tf32() == before
    with tf32_products("cpu"):
        assert _matmul_tf32() == before
    assert tf32_note("cpu") == "" and "TF32" in tf32_note("cuda")
