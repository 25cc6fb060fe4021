from kernellab import pipeline

with pipeline.logged(snakemake.log[0]):
    pipeline.autotune(snakemake.config, snakemake.wildcards.kernel, snakemake.output.csv)
