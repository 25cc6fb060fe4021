# the names this job runs, not the module: its code stamp follows them only (kernellab.workflow.imports)
from kernellab.workflow.pipeline import cuda_resources, logged

with logged(snakemake.log[0], snakemake.params.bytecode):
    cuda_resources(list(snakemake.input), snakemake.output[0])
