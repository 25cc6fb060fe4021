# the names this job runs, not the module: its code stamp follows them only (kernellab.workflow.imports)
from kernellab.workflow.pipeline import job, profile

with job(
    snakemake.log[0],
    gpu=snakemake.resources.get("gpu", 0),
    bytecode=snakemake.params.bytecode,
    **snakemake.params.env,
):
    profile(
        snakemake.params.config,
        snakemake.params.kernels,
        snakemake.input.build,
        [snakemake.output.csv],
        [snakemake.output.traces],
    )
