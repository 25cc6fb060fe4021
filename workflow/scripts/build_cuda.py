# the names this job runs, not the module: its code stamp follows them only (kernellab.workflow.imports)
from kernellab.workflow.pipeline import build_cuda, logged

with logged(snakemake.log[0], snakemake.params.bytecode):
    build_cuda(snakemake.output.json, snakemake.output.resources, snakemake.params.folder)
