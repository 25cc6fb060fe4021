from kernellab.workflow import aggregate, pipeline

with pipeline.logged(snakemake.log[0], snakemake.params.bytecode):
    aggregate.run(
        snakemake.params.config,
        stage=None,
        survey_json=snakemake.input.survey,
        bench_csvs=list(snakemake.input.bench),
        check_csvs=list(snakemake.input.check),
        ptx_indexes=list(snakemake.input.ptx),
        build_json=list(snakemake.input.build),
        out_summary=snakemake.output.summary,
        out_ladders=snakemake.output.ladders,
        out_env=snakemake.output.environment,
        command=snakemake.params.command,
    )
