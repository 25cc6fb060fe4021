from kernellab.workflow import pipeline

with pipeline.logged(snakemake.log[0]):
    pipeline.cuda_resources(list(snakemake.input), snakemake.output[0])
