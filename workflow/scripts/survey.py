from kernellab import pipeline

with pipeline.logged(snakemake.log[0]):
    pipeline.survey(snakemake.output.json)
