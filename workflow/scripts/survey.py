# the names this job runs, not the module: its code stamp follows them only (kernellab.workflow.imports)
from kernellab.workflow.pipeline import job, survey

with job(
    snakemake.log[0],
    gpu=snakemake.resources.get("gpu", 0),
    bytecode=snakemake.params.bytecode,
    **snakemake.params.env,
):
    survey(snakemake.output.json)
