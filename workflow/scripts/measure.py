# the names this job runs, not the module: its code stamp follows them only (kernellab.workflow.imports)
from kernellab.workflow.pipeline import job, measure

with job(
    snakemake.log[0],
    gpu=snakemake.resources.get("gpu", 0),
    bytecode=snakemake.params.bytecode,
    **snakemake.params.env,
):
    measure(
        snakemake.params.config,
        snakemake.wildcards.kernel,
        snakemake.input.build,
        snakemake.output.check,
        snakemake.output.bench,
        snakemake.output.samples,
        snakemake.output.autotune,
        snakemake.output.profile,
        snakemake.output.traces,
    )
