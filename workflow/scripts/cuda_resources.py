from kernellab.workflow import pipeline

with pipeline.logged(snakemake.log[0], snakemake.params.bytecode):
    pipeline.cuda_resources(list(snakemake.input), snakemake.output[0])
