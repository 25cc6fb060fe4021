"""The set's one ncu job profiles again only the families whose code or config changed since
their last profile, and keeps the others' rows (issue 41 item 9): one session, as before, but
an edit to one family costs the GPU that family's profiling only."""

from pathlib import Path

import pandas as pd
import pytest
import yaml

from kernellab.engine import ncu, registry, runtime
from kernellab.workflow import pipeline

ROOT = Path(__file__).resolve().parents[1]
KERNELS = ["matmul", "softmax"]


def gpu_config() -> dict:
    """The default config, targeting a GPU."""
    config = yaml.safe_load((ROOT / "config" / "config.yaml").read_text())
    config["target"] = "gpu"
    return config


@pytest.fixture
def session(tmp_path, monkeypatch):
    """pipeline.ncu on a pretend GPU: each call records the steps its ncu session was given."""
    config = gpu_config()
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


def test_one_ncu_session_profiles_every_ladder_of_every_family_at_its_own_shape(session, monkeypatch):
    run, sessions = session
    fake = ncu.profile_steps
    monkeypatch.setattr(ncu, "profile_steps", lambda steps, *args, **kwargs: [  # each step's record its index
        {**r, "duration_us": float(i)} for i, r in enumerate(fake(steps, *args, **kwargs))])
    tables = run({"matmul": "m1", "softmax": "s1"})
    assert len(sessions) == 1  # one session for every ladder of both families
    config, reg = gpu_config(), registry.load()
    sent, n = [], 0
    for kernel, rows in tables.items():
        assert set(rows["kernel"]) == {kernel}  # each family's table has its own steps only
        fam = reg.family(kernel)
        plan = pipeline._plan(config, kernel)
        assert set(rows["ladder"].dropna()) == set(fam.ladders())  # and the ncu_cases, of no ladder
        for ladder, steps in fam.ladders().items():
            got = rows[rows["ladder"] == ladder]
            shape = "x".join(map(str, plan.ladder_shape(ladder)))
            assert list(got["impl_key"]) == [s.key for s in steps]
            assert set(got["shape"]) == {shape} and set(got["dtype"]) == {plan.ladder_dtype(steps)}
        sent += list(zip(rows["kernel"], rows["impl_key"], rows["dtype"], rows["shape"].astype(str), strict=True))
        # each step's record came back to it
        assert list(rows["duration_us"]) == list(range(n, n + len(rows)))
        n += len(rows)
    # each step went to ncu with its own family, ladder shape and dtype
    assert [tuple(step[:4]) for step in sessions[0]] == sent


def test_ncu_profiles_the_runs_own_parameters(tmp_path, monkeypatch):
    """A config that sweeps other parameters than the family's defaults (dropout p: [0.5, 0.3] where the
    family's first is 0.1) has its ncu cases profiled at the run's first parameters, the ones its
    timings include; a step without parameters on ncu_target's command line keeps the family's first
    defaults."""
    config = gpu_config()
    config["kernels"]["dropout"].update(params={"p": [0.5, 0.3]},
                                        ncu_cases=[{"impl": "triton"}, {"impl": "torch_fused"}])
    sessions = []

    def fake_profile_steps(steps, build_json, timeout_s, kernel_dirs=None):
        sessions.append(steps)
        return [{"status": "ok", "reason": ""} for _ in steps]

    monkeypatch.setattr(runtime, "has_gpu", lambda: True)
    monkeypatch.setattr(ncu, "profile_steps", fake_profile_steps)
    pipeline.ncu(config, ["dropout"], [str(tmp_path / "build.json")], [str(tmp_path / "dropout.csv")])
    assert sessions[0] and {tuple(s[4].items()) for s in sessions[0]} == {(("p", 0.5),)}
    specs = ncu.command(sessions[0], "build.json", "status.json")[-len(sessions[0]):]
    assert all(s.endswith(":p=0.5") for s in specs)
    assert ncu.parse_step_spec(specs[0])[4] == {"p": 0.5}
    assert ncu.parse_step_spec("attention:triton@fa2:bf16:4x16x4096x128:causal=true") == (
        "attention", "triton@fa2", "bf16", "4x16x4096x128", {"causal": True})
    assert ncu.parse_step_spec("gelu:triton:fp32:1024")[4] is None
