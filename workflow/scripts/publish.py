from kernellab import pipeline

with pipeline.logged(snakemake.log[0]):
    pipeline.publish(snakemake.params.stage, snakemake.params.results)
