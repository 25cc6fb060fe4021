from kernellab import pipeline

with pipeline.logged(snakemake.log[0]):
    pipeline.report(
        stage_set_dir=snakemake.input.summary.rsplit("/", 1)[0],
        results_root=snakemake.params.results,
        set_name=snakemake.params.set_name,
        others=list(snakemake.params.others),
    )
