from kernellab import pipeline

with pipeline.logged(snakemake.log[0]):
    pipeline.ncu(snakemake.params.config, snakemake.wildcards.kernel, snakemake.input.build, snakemake.output.csv)
