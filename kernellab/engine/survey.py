"""The hardware survey: what this machine is and its two measured ceilings.

Every ``pct_of_peak_*`` column divides by what is measured here, on this machine, in
this run: the device-to-device copy bandwidth (bytes read plus bytes written) and the
rate of a large matrix product through PyTorch (cuBLAS on a GPU) per dtype. Datasheet
figures, where the device is known, are recorded beside them as a second reference.
"""

from __future__ import annotations

import platform
import re
import time

from kernellab.engine import nvml, runtime
from kernellab.engine.stats import summarize


def _sheet(name: str, bw_gbps: float, fp32: float, tf32: float, bf16: float) -> dict:
    """A datasheet entry; fp16's dense matrix rate is bf16's on all of these parts."""
    return {"name": name, "bw_gbps": bw_gbps, "tflops": {"fp32": fp32, "tf32": tf32, "bf16": bf16, "fp16": bf16}}


# Vendor datasheet figures (dense, no sparsity): memory bandwidth in GB/s and matrix
# rates in TFLOP/s. Leads, not ceilings: the measured numbers are what rows divide by.
DATASHEET = {
    "nvidia-h200": _sheet("NVIDIA H200 SXM", 4800.0, 67.0, 494.7, 989.4),
    "nvidia-h100-80gb-hbm3": _sheet("NVIDIA H100 SXM", 3350.0, 67.0, 494.7, 989.4),
    "nvidia-h100-pcie": _sheet("NVIDIA H100 PCIe", 2000.0, 51.0, 378.0, 756.0),
    "nvidia-a100-sxm4-80gb": _sheet("NVIDIA A100 SXM 80GB", 2039.0, 19.5, 156.0, 312.0),
    "nvidia-a100-sxm4-40gb": _sheet("NVIDIA A100 SXM 40GB", 1555.0, 19.5, 156.0, 312.0),
    "nvidia-l4": _sheet("NVIDIA L4", 300.0, 30.3, 60.0, 121.0),
    "nvidia-geforce-rtx-4090": _sheet("NVIDIA GeForce RTX 4090", 1008.0, 82.6, 82.6, 165.2),
}


def slugify(name: str) -> str:
    return re.sub(r"[^a-z0-9_]+", "-", name.lower()).strip("-")


def device_name() -> str:
    """GPU name from NVML (no CUDA initialisation), else the CPU's architecture."""
    info = nvml.Monitor().device_info()
    if info.get("name"):
        return str(info["name"])
    if runtime.has_gpu():
        import torch

        return torch.cuda.get_device_name(0)
    return f"CPU {platform.machine()}"


def hardware_slug() -> str:
    """``nvidia-h200``, ``cpu-x86_64``...: results of different hardware never mix. Without an
    NVIDIA driver's device node there is no GPU to ask torch about (parsing the workflow reads
    this: it imports no torch on a machine without a GPU)."""
    import os

    if nvml.Monitor().device_info().get("name") or (os.path.exists("/dev/nvidiactl") and runtime.has_gpu()):
        return slugify(device_name())
    return slugify(f"cpu-{platform.machine()}")


# ------------------------------------------------------------------ ceilings
# Ceilings are timed by the benchmark's own loop (kernellab.engine.timing.measure: warm-up by time,
# samples until the noise target or the budget, the median), so a row and its ceiling are the
# same statistic of the same timer. Warm (no L2 flush): a ceiling is the best the machine does.
SURVEY_TIMING = {"mode": "warm", "budget_s": 0.3, "graph": False}

# Square sizes whose best rate is the ceiling: the benchmark's shapes span small to large, and
# on a CPU a small product (in cache) can run faster than a large one, so several are timed.
MATMUL_SIZES = {"cuda": (2048, 4096, 8192), "cpu": (64, 128, 256, 512)}


def _time_us(fn, device: str) -> float:
    from kernellab.engine.timing import TimingConfig, measure

    return summarize(measure(fn, TimingConfig.from_config(SURVEY_TIMING), device).samples_us).median


def copy_bandwidth_gbps(device: str, nbytes: int | None = None) -> float:
    """Device-to-device copy, counting bytes read plus bytes written."""
    import torch

    nbytes = nbytes or (2 * 2**30 if device == "cuda" else 256 * 2**20)
    src = torch.randn(nbytes // 4, device=device)
    dst = torch.empty_like(src)
    us = _time_us(lambda: dst.copy_(src), device)
    return 2 * nbytes / (us * 1e-6) / 1e9


def matmul_tflops(device: str, dtype: str, sizes: tuple[int, ...] | None = None) -> float:
    """Best rate of n^3 matrix products through PyTorch on random data, over ``sizes``."""
    import torch

    td = runtime.torch_dtype(dtype)
    best = 0.0
    for n in sizes or MATMUL_SIZES["cuda" if device == "cuda" else "cpu"]:
        a = torch.randn(n, n, device=device).to(td)
        b = torch.randn(n, n, device=device).to(td)
        with runtime.matmul_precision(dtype):
            us = _time_us(lambda a=a, b=b: a @ b, device)
        best = max(best, 2 * n**3 / (us * 1e-6) / 1e12)
    return best


def survey(device: str) -> dict:
    """All ceilings and properties; the ``survey`` rule writes this as survey.json."""
    import torch

    slug = hardware_slug()
    out: dict = {
        "hardware": slug,
        "device_name": device_name(),
        "is_gpu": device == "cuda",
        "timestamp": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "sm_count": None,
        "l2_bytes": None,
        "memory_bytes": None,
        "datasheet": DATASHEET.get(slug),
    }
    if device == "cuda":
        props = torch.cuda.get_device_properties(0)
        out.update(sm_count=props.multi_processor_count, l2_bytes=int(getattr(props, "L2_cache_size", 0)) or None,
                   memory_bytes=int(props.total_memory), compute_capability=f"{props.major}.{props.minor}")
    else:
        import os

        out.update(cpu_count=os.cpu_count(), llc_bytes=_llc())
    mon = nvml.Monitor()
    out["clocks_before"] = mon.reading().clocks()
    out["copy_gbps"] = copy_bandwidth_gbps(device)
    out["matmul_tflops"] = {d: matmul_tflops(device, d) for d in runtime.DTYPES}
    out["not_meaningful"] = not_meaningful(out)
    out["clocks_after"] = mon.reading().clocks()
    out["nvml"] = mon.device_info()
    return out


def _llc() -> int:
    from kernellab.engine.timing import llc_bytes

    return llc_bytes()


# A reduced-precision product far slower than fp32 on the same machine has no native arithmetic
# there (fp16 on a CPU without fp16 units runs a scalar fallback: 0.003 TFLOP/s against fp32's
# 0.16): its rate bounds no kernel's design, so no comparison may predict from it.
MIN_SHARE_OF_FP32 = 0.1


def not_meaningful(survey_data: dict) -> dict[str, str]:
    """{dtype: why} for each matmul ceiling that is not a meaningful ceiling: under
    ``MIN_SHARE_OF_FP32`` of the same machine's fp32 rate (one not measured is no entry)."""
    rates = survey_data.get("matmul_tflops") if isinstance(survey_data, dict) else None
    rates = rates if isinstance(rates, dict) else {}
    fp32 = _rate(rates.get("fp32"))
    out = {}
    for dtype in sorted(rates):
        rate = _rate(rates[dtype])
        if dtype == "fp32" or fp32 <= 0 or rate <= 0 or rate >= MIN_SHARE_OF_FP32 * fp32:
            continue
        out[dtype] = (
            f"{rate:.3g} TFLOP/s, under {MIN_SHARE_OF_FP32:.0%} of this machine's fp32 rate ({fp32:.3g}): "
            f"no native {dtype} arithmetic here"
        )
    return out


def _rate(v) -> float:
    try:
        f = float(v)
    except (TypeError, ValueError):
        return 0.0
    return f if f == f else 0.0  # NaN counts as not measured


def ceilings(survey_data: dict, family_bound: str, dtype: str) -> tuple[float, float]:
    """(bandwidth GB/s, FLOP/s ceiling TFLOP/s) that a row's percentages divide by.

    Matrix families divide by the matrix rate of their dtype; every other family by
    the fp32 rate (vector units), which bounds elementwise arithmetic whatever the
    storage type.
    """
    rates = survey_data.get("matmul_tflops") or {}
    rate = rates.get(dtype if family_bound == "compute" else "fp32")
    return survey_data.get("copy_gbps"), rate
