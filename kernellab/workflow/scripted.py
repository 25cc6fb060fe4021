"""What each GPU rule's script does first: its job (``pipeline.job``) set up from the ``snakemake``
object Snakemake hands the script: its log, its GPU resource, its bytecode cache and the rule's
environment params."""

from __future__ import annotations

from kernellab.workflow.pipeline import job


def job_of(smk):
    return job(smk.log[0], gpu=smk.resources.get("gpu", 0), bytecode=smk.params.bytecode, **smk.params.env)
