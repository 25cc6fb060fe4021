# the names this job runs, not the module: its code stamp follows them only (kernellab.workflow.imports)
from kernellab.workflow.pipeline import survey
from kernellab.workflow.scripted import job_of

with job_of(snakemake):
    survey(snakemake.output.json)
