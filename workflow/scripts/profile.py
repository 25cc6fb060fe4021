from kernellab import pipeline

with pipeline.logged(snakemake.log[0]):
    pipeline.profile(
        snakemake.params.config,
        snakemake.params.kernels,
        snakemake.input.build,
        snakemake.output.csv,
        snakemake.output.traces,
    )
