from kernellab.workflow import pipeline

with pipeline.logged(snakemake.log[0], snakemake.params.bytecode):
    pipeline.build_cuda(snakemake.output.json, snakemake.output.resources, snakemake.params.folder)
