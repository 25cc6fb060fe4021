"""GPU slots on a multi-GPU host, with a fake list of devices: concurrent jobs get different
devices, a job waits while every device is taken, and a slot frees when its process ends."""

import multiprocessing as mp
import os
import time

import pytest

from kernellab.workflow import gpu_slots

DEVICES = ["0", "1"]


def _hold(lock_dir, got, devices=DEVICES):
    """A GPU job: takes a slot, reports it, then works until it is killed."""
    slot = gpu_slots.acquire(devices, lock_dir, timeout_s=30, poll_s=0.05)
    got.put((os.getpid(), slot.device, time.monotonic()))
    time.sleep(60)


def test_concurrent_jobs_get_different_devices_and_a_third_waits(tmp_path):
    ctx = mp.get_context("fork")
    got = ctx.Queue()
    jobs = [ctx.Process(target=_hold, args=(tmp_path, got)) for _ in range(3)]
    try:
        for p in jobs[:2]:
            p.start()
        assert sorted(got.get(timeout=30)[1] for _ in range(2)) == DEVICES
        started = time.monotonic()
        jobs[2].start()
        time.sleep(0.5)
        assert got.empty(), "a third job must wait while both devices are taken"
        jobs[0].kill()  # however a job ends, its slot frees
        jobs[0].join()
        _, device, when = got.get(timeout=30)
        assert device in DEVICES and when - started >= 0.5
    finally:
        for p in jobs:
            if p.is_alive():
                p.kill()
            p.join(10)


def test_timeout_names_the_devices(tmp_path):
    slot = gpu_slots.acquire(["3"], tmp_path)
    try:
        ctx = mp.get_context("fork")
        q = ctx.Queue()

        def try_take():
            try:
                gpu_slots.acquire(["3"], tmp_path, timeout_s=0.3, poll_s=0.05)
                q.put("taken")
            except TimeoutError as exc:
                q.put(str(exc))

        p = ctx.Process(target=try_take)
        p.start()
        p.join(30)
        assert "GPUs 3 stayed taken" in q.get(timeout=5)
    finally:
        slot.release()


def test_pin_sets_the_only_visible_device(tmp_path, monkeypatch):
    monkeypatch.delenv("SLURM_JOB_ID", raising=False)
    monkeypatch.setenv("CUDA_VISIBLE_DEVICES", "4,5")
    assert gpu_slots.visible_devices() == ["4", "5"]
    ctx = mp.get_context("fork")
    q = ctx.Queue()

    def pin_and_report():
        q.put((gpu_slots.pin(tmp_path), os.environ["CUDA_VISIBLE_DEVICES"]))

    p = ctx.Process(target=pin_and_report)
    p.start()
    p.join(30)
    device, visible = q.get(timeout=5)
    assert device in ("4", "5") and visible == device


def test_no_gpu_or_slurm_takes_no_slot(tmp_path, monkeypatch):
    monkeypatch.setenv("SLURM_JOB_ID", "7")
    assert gpu_slots.pin(tmp_path, devices=["0"]) is None
    monkeypatch.delenv("SLURM_JOB_ID")
    assert gpu_slots.pin(tmp_path, devices=[]) is None
    with pytest.raises(ValueError):
        gpu_slots.acquire([], tmp_path)
