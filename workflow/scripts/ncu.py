# the names this job runs, not the module: its code stamp follows them only (kernellab.workflow.imports)
from kernellab.workflow.pipeline import ncu
from kernellab.workflow.scripted import job_of

with job_of(snakemake):
    ncu(
        snakemake.params.config,
        snakemake.params.kernels,
        list(snakemake.input.build),
        snakemake.output.csv,
        keys=snakemake.params.family_keys,
        kept_dir=snakemake.params.kept,
    )
