"""Clocks, temperature, power and throttle reasons through nvidia-ml-py (NVML).

Everything degrades to empty readings when NVML or a GPU is absent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

# Throttle reasons that make a sample suspect: thermal and power limits, hardware
# slowdown. (Idle, application-clock and sync-boost reasons are not throttling.)
_REASON_NAMES = ("SwPowerCap", "HwSlowdown", "SwThermalSlowdown", "HwThermalSlowdown", "HwPowerBrakeSlowdown")


def _pynvml():
    try:
        import pynvml
    except ImportError:
        return None
    return pynvml


def _throttle_mask(pynvml) -> int:
    mask = 0
    for name in _REASON_NAMES:
        for prefix in ("nvmlClocksEventReason", "nvmlClocksThrottleReason"):
            mask |= int(getattr(pynvml, prefix + name, 0))
    return mask


@dataclass
class Reading:
    reasons: int = 0
    values: dict = field(default_factory=dict)

    def clocks(self) -> dict:
        return dict(self.values)


class Monitor:
    """NVML handle of GPU 0 (the one torch uses by default); no-op without NVML."""

    def __init__(self, index: int = 0):
        self.handle = None
        self.mask = 0
        self.pynvml = _pynvml()
        if self.pynvml is None:
            return
        try:
            self.pynvml.nvmlInit()
            self.handle = self.pynvml.nvmlDeviceGetHandleByIndex(index)
            self.mask = _throttle_mask(self.pynvml)
        except Exception:  # noqa: BLE001 - NVML absent or refused: readings stay empty
            self.handle = None

    def reading(self) -> Reading:
        if self.handle is None:
            return Reading()
        p = self.pynvml
        values: dict = {}
        reasons = 0
        getters = {
            "sm_clock_mhz": lambda h: p.nvmlDeviceGetClockInfo(h, p.NVML_CLOCK_SM),
            "mem_clock_mhz": lambda h: p.nvmlDeviceGetClockInfo(h, p.NVML_CLOCK_MEM),
            "temperature_c": lambda h: p.nvmlDeviceGetTemperature(h, p.NVML_TEMPERATURE_GPU),
            "power_w": lambda h: p.nvmlDeviceGetPowerUsage(h) / 1000.0,
        }
        for key, get in getters.items():
            try:
                values[key] = float(get(self.handle))
            except Exception:  # noqa: BLE001 - one missing counter must not stop timing
                values[key] = math.nan
        get_reasons = getattr(p, "nvmlDeviceGetCurrentClocksEventReasons", None) or getattr(
            p, "nvmlDeviceGetCurrentClocksThrottleReasons", None
        )
        try:
            reasons = int(get_reasons(self.handle)) if get_reasons else 0
        except Exception:  # noqa: BLE001
            reasons = 0
        return Reading(reasons, values)

    def compute_capability(self) -> int | None:
        """``major * 10 + minor`` (90 on Hopper), without initialising CUDA."""
        if self.handle is None:
            return None
        try:
            major, minor = self.pynvml.nvmlDeviceGetCudaComputeCapability(self.handle)
        except Exception:  # noqa: BLE001
            return None
        return int(major) * 10 + int(minor)

    def device_info(self) -> dict:
        if self.handle is None:
            return {}
        p = self.pynvml
        info = {}
        for key, get in {
            "name": lambda h: p.nvmlDeviceGetName(h),
            "driver": lambda h: p.nvmlSystemGetDriverVersion(),
            "max_sm_clock_mhz": lambda h: p.nvmlDeviceGetMaxClockInfo(h, p.NVML_CLOCK_SM),
            "max_mem_clock_mhz": lambda h: p.nvmlDeviceGetMaxClockInfo(h, p.NVML_CLOCK_MEM),
            "power_limit_w": lambda h: p.nvmlDeviceGetPowerManagementLimit(h) / 1000.0,
        }.items():
            try:
                val = get(self.handle)
                info[key] = val.decode() if isinstance(val, bytes) else val
            except Exception:  # noqa: BLE001
                info[key] = None
        return info


def throttled(before: Reading, after: Reading, mask: int | None = None) -> bool:
    """True when either reading reports a thermal or power throttle reason."""
    if mask is None:
        pynvml = _pynvml()
        mask = _throttle_mask(pynvml) if pynvml else 0
    return bool((before.reasons | after.reasons) & mask)
