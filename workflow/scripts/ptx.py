# the names this job runs, not the module: its code stamp follows them only (kernellab.workflow.imports)
from kernellab.workflow.pipeline import ptx
from kernellab.workflow.scripted import job_of

with job_of(snakemake):
    ptx(snakemake.params.config, snakemake.params.kernels, snakemake.input.build, [snakemake.output.index])
