"""The tiny CPU config through a real SLURM: munged, slurmctld and slurmd from Debian's packages,
started on this host by the test and stopped by their pids, and Snakemake's own executor plugin
(`--profile profiles/slurm`). The run must hold the same cases as a local run."""

import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pytest

ROOT = Path(__file__).resolve().parents[1]
# The jobstep plugin drops SLURM_* variables (SLURM_CONF too) before its srun: a job finds the
# cluster only through the default path.
CONF = Path("/etc/slurm/slurm.conf")
DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo")

SLURM_CONF = """ClusterName=kernellab
SlurmctldHost={host}
AuthType=auth/munge
AuthInfo=socket={tmp}/munge.socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SlurmUser=root
SlurmdUser=root
StateSaveLocation={tmp}/state
SlurmdSpoolDir={tmp}/spool
SlurmctldPidFile={tmp}/slurmctld.pid
SlurmdPidFile={tmp}/slurmd.pid
SlurmctldLogFile={tmp}/slurmctld.log
SlurmdLogFile={tmp}/slurmd.log
SlurmctldPort=16817
SlurmdPort=16818
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MpiDefault=none
ReturnToService=2
NodeName={host} CPUs={cpus} RealMemory={mem_mb} State=UNKNOWN
PartitionName=main Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""


def _skip_reason() -> str | None:
    missing = [d for d in DAEMONS if shutil.which(d) is None]
    if missing:
        return f"SLURM not installed ({', '.join(missing)} missing): apt-get install slurm-wlm munge"
    try:
        import snakemake_executor_plugin_slurm  # noqa: F401
    except ImportError:
        return "snakemake-executor-plugin-slurm not installed (envs/requirements-test.txt)"
    if os.geteuid() != 0:
        return "starting slurmd needs root"
    if CONF.exists():
        return f"{CONF} exists: a SLURM of this machine's own, not started by this test"
    return None


@pytest.fixture(scope="module")
def slurm(tmp_path_factory):
    reason = _skip_reason()
    if reason:
        pytest.skip(reason)
    tmp = tmp_path_factory.mktemp("slurm")
    for sub in ("state", "spool"):
        (tmp / sub).mkdir()
    key = tmp / "munge.key"
    key.write_bytes(os.urandom(1024))
    key.chmod(0o400)
    pids = []
    try:
        subprocess.run(["munged", "--force", f"--socket={tmp}/munge.socket", f"--key-file={key}",
                        f"--pid-file={tmp}/munged.pid", f"--log-file={tmp}/munged.log",
                        f"--seed-file={tmp}/munged.seed"], check=True, timeout=60)
        pids.append(tmp / "munged.pid")
        host = socket.gethostname().split(".")[0]
        mem_mb = int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20 * 0.8)
        CONF.parent.mkdir(parents=True, exist_ok=True)
        CONF.write_text(SLURM_CONF.format(host=host, tmp=tmp, cpus=os.cpu_count(), mem_mb=mem_mb))
        for daemon in ("slurmctld", "slurmd"):
            subprocess.run([daemon], check=True, timeout=60)
            pids.append(tmp / f"{daemon}.pid")
        deadline = time.time() + 60
        while time.time() < deadline:
            state = subprocess.run(["sinfo", "-h", "-o", "%t"], capture_output=True, text=True).stdout.strip()
            if state == "idle":
                break
            time.sleep(1)
        else:
            pytest.fail(f"the SLURM node never became idle (sinfo: {state!r}); see {tmp}/slurmctld.log")
        yield tmp
    finally:
        for pid_file in reversed(pids):
            try:
                os.kill(int(pid_file.read_text().split()[0]), signal.SIGTERM)
            except (OSError, ValueError):
                pass
        CONF.unlink(missing_ok=True)


@pytest.mark.slow
def test_tiny_config_through_slurm_matches_a_local_run(slurm, tiny_run, tmp_path):
    cpus = os.cpu_count()
    cmd = [sys.executable, "-m", "snakemake", "--profile", "profiles/slurm", "--jobs", str(cpus),
           "--slurm-status-command", "squeue", "--slurm-init-seconds-before-status-checks", "1",
           "--latency-wait", "5", "--slurm-logdir", str(tmp_path / "slurm-logs"), "--slurm-keep-successful-logs",
           "--default-resources", "mem_mb=2000", "runtime=30", "cpus_per_task=1",
           "--set-resources", "build_cuda:cpus_per_task=1",
           "--configfile", "config/test.yaml",
           "--config", "target=cpu", f"staging={tmp_path / 'staging'}", f"results={tmp_path / 'results'}"]
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-5000:]
    # every job went through SLURM: its log, named by its SLURM job id, under the rule's folder
    ran = {p.parent.parent.name for p in (tmp_path / "slurm-logs").rglob("*.log")}
    assert {"rule_survey", "rule_build_cuda", "rule_measure", "rule_report", "rule_publish"} <= ran, ran
    (out,) = [p for p in (tmp_path / "results").iterdir() if p.is_dir()]
    key = ["kernel", "impl_key", "shape", "dtype", "params", "status"]
    ours = pd.read_csv(out / "summary.csv", keep_default_na=False)[key]
    local = pd.read_csv(tiny_run[0] / "summary.csv", keep_default_na=False)[key]
    assert sorted(map(tuple, ours.values.tolist())) == sorted(map(tuple, local.values.tolist()))
