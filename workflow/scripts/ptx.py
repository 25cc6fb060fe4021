from kernellab import pipeline

with pipeline.logged(snakemake.log[0]):
    pipeline.ptx(snakemake.params.config, snakemake.params.kernels, snakemake.output.index)
