from kernellab.workflow import assemble, pipeline

with pipeline.logged(snakemake.log[0], snakemake.params.bytecode):
    assemble.compare(
        snakemake.input.a,
        snakemake.input.b,
        snakemake.wildcards.a,
        snakemake.wildcards.b,
        snakemake.output.csv,
        snakemake.output.png,
        float(snakemake.params.threshold),
        float(snakemake.params.min_us),
    )
