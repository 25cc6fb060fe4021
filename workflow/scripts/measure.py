from kernellab import pipeline

with pipeline.logged(snakemake.log[0]):
    pipeline.measure(
        snakemake.params.config,
        snakemake.wildcards.kernel,
        snakemake.input.build,
        snakemake.output.check,
        snakemake.output.bench,
        snakemake.output.samples,
        snakemake.output.autotune,
    )
