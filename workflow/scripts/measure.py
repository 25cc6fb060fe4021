# the names this job runs, not the module: its code stamp follows them only (kernellab.workflow.imports)
from kernellab.workflow.pipeline import measure
from kernellab.workflow.scripted import job_of

with job_of(snakemake):
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
