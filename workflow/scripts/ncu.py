# the names this job runs, not the module: its code stamp follows them only (kernellab.workflow.imports)
from kernellab.workflow.pipeline import job, ncu

with job(
    snakemake.log[0],
    gpu=snakemake.resources.get("gpu", 0),
    bytecode=snakemake.params.bytecode,
    **snakemake.params.env,
):
    ncu(
        snakemake.params.config,
        snakemake.params.kernels,
        list(snakemake.input.build),
        snakemake.output.csv,
        keys=snakemake.params.family_keys,
        kept_dir=snakemake.params.kept,
    )
