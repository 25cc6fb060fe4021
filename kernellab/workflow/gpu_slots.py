"""One GPU per job on a multi-GPU host.

``snakemake --cores N --resources gpu=K`` lets up to K GPU jobs run at once but gives them
no device ids (Snakemake's issue #281). Each GPU job therefore takes a free slot itself: an
exclusive ``flock`` on ``<lock_dir>/gpu<id>.lock``, held for the job's lifetime (the kernel
drops it when the process ends, however it ends), and makes that device its only visible one
with ``CUDA_VISIBLE_DEVICES`` before CUDA starts. Under SLURM the allocation already pins the
job's GPUs, so nothing is locked there.
"""

from __future__ import annotations

import fcntl
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import IO


@dataclass
class Slot:
    device: str
    handle: IO | None  # the locked file; closing it frees the slot

    def release(self) -> None:
        if self.handle is not None:
            self.handle.close()
            self.handle = None


def visible_devices() -> list[str]:
    """The devices this process may use: CUDA_VISIBLE_DEVICES if set, else every GPU NVML
    counts (none without a driver)."""
    told = os.environ.get("CUDA_VISIBLE_DEVICES")
    if told is not None:
        return [d.strip() for d in told.split(",") if d.strip() and d.strip() != "-1"]
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            return [str(i) for i in range(pynvml.nvmlDeviceGetCount())]
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - no driver, no NVML: no GPU
        return []


def acquire(devices: list[str], lock_dir: str | os.PathLike, timeout_s: float | None = None,
            poll_s: float = 0.2) -> Slot:
    """The first free device of ``devices``, locked for this process; waits while all are taken
    (TimeoutError after ``timeout_s``)."""
    if not devices:
        raise ValueError("no GPU to take a slot on")
    lock_dir = Path(lock_dir)
    lock_dir.mkdir(parents=True, exist_ok=True)
    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    while True:
        for device in devices:
            handle = open(lock_dir / f"gpu{device}.lock", "a")  # noqa: SIM115 - held until release
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                handle.close()
                continue
            handle.write(f"{os.getpid()}\n")
            handle.flush()
            return Slot(device, handle)
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"all of GPUs {', '.join(devices)} stayed taken for {timeout_s:g} s "
                               f"(locks in {lock_dir})")
        time.sleep(poll_s)


_held: list[Slot] = []


def pin(lock_dir: str | os.PathLike, devices: list[str] | None = None) -> str | None:
    """Take a slot and make its device the only visible one; the device id, or None where there
    is no GPU or SLURM has pinned the job already."""
    if os.environ.get("SLURM_JOB_ID"):
        return None
    devices = visible_devices() if devices is None else devices
    if not devices:
        return None
    slot = acquire(devices, lock_dir)
    _held.append(slot)  # held until the process ends
    os.environ["CUDA_VISIBLE_DEVICES"] = slot.device
    return slot.device
