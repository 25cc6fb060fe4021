"""The set's one ncu job profiles again only the families whose code or config changed since
their last profile, and keeps the others' rows (issue 41 item 9): one session, as before, but
an edit to one family costs the GPU that family's profiling only."""

from pathlib import Path

import pandas as pd
import pytest
import yaml

from kernellab.engine import ncu, runtime
from kernellab.workflow import pipeline

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ["matmul", "softmax"]


@pytest.fixture
def session(tmp_path, monkeypatch):
    """pipeline.ncu on a pretend GPU: each call records the steps its ncu session was given."""
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config["target"] = "gpu"
    sessions = []

    def fake_profile_steps(steps, build_json, timeout_s, kernel_dirs=None):
        sessions.append(steps)
        return [{"status": "ok", "reason": "", "duration_us": float(len(sessions))} for _ in steps]

    monkeypatch.setattr(runtime, "has_gpu", lambda: True)
    monkeypatch.setattr(ncu, "profile_steps", fake_profile_steps)
    outs = [tmp_path / f"ncu/{k}.csv" for k in KERNELS]

    def run(keys):
        for o in outs:  # Snakemake removes a job's outputs before it runs
            o.unlink(missing_ok=True)
        pipeline.ncu(config, KERNELS, [str(tmp_path / "build.json")], [str(o) for o in outs],
                     keys=keys, kept_dir=str(tmp_path / "kept"))
        return {k: pd.read_csv(o) for k, o in zip(KERNELS, outs, strict=True)}

    return run, sessions


def test_an_edited_family_is_profiled_again_alone_and_the_others_rows_are_kept(session):
    run, sessions = session
    first = run({"matmul": "m1", "softmax": "s1"})
    assert {s[0] for s in sessions[0]} == set(KERNELS)

    second = run({"matmul": "m1", "softmax": "s2"})  # softmax's code changed
    assert len(sessions) == 2 and {s[0] for s in sessions[1]} == {"softmax"}
    pd.testing.assert_frame_equal(second["matmul"], first["matmul"])  # the first session's rows
    assert set(second["softmax"]["duration_us"]) == {2.0}  # the second session's

    run({"matmul": "m1", "softmax": "s2"})  # nothing changed: no session at all
    assert len(sessions) == 2


def test_a_family_whose_profile_failed_is_profiled_again(session, monkeypatch):
    run, sessions = session
    failing = ncu.profile_steps

    def one_failure(steps, *args, **kwargs):
        got = failing(steps, *args, **kwargs)
        return [{**g, "status": "error", "reason": "timed out"} if s[0] == "matmul" else g
                for s, g in zip(steps, got, strict=True)]

    monkeypatch.setattr(ncu, "profile_steps", one_failure)
    run({"matmul": "m1", "softmax": "s1"})
    monkeypatch.setattr(ncu, "profile_steps", failing)
    again = run({"matmul": "m1", "softmax": "s1"})
    assert {s[0] for s in sessions[1]} == {"matmul"}
    assert set(again["matmul"]["status"]) == {"ok"}
