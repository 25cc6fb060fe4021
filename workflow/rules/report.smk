rule aggregate:
    input:
        survey=rules.survey.output.json,
        build=cuda_builds(KERNELS),
        resources=rules.cuda_resources.output,
        bench=per_kernel("bench/{kernel}.csv"),
        check=per_kernel("check/{kernel}.csv"),
        ptx=per_kernel("ptx/{kernel}/index.json"),
    output:
        summary=report(
            stage("summary.csv"),
            caption="../../report/captions/summary.rst",
            category="Summary",
        ),
        ladders=stage("ladders.json"),
        environment=stage("environment.json"),
    log:
        stage("logs/aggregate.log"),
    params:
        bytecode=bytecode_cache,
        # the whole config: its hash names the run in environment.json
        config=sorted_keys(RUN_CONFIG),
        command=run_command,
    script:
        "../scripts/aggregate.py"


rule report:
    input:
        summary=rules.aggregate.output.summary,
        profile=per_kernel("profile/{kernel}.csv"),
        autotune=per_kernel("autotune/{kernel}.csv"),
        ncu=per_kernel("ncu/{kernel}.csv", NCU_KERNELS),
        compared=compared_summaries,
    output:
        html=report(
            stage("report.html"),
            caption="../../report/captions/report.rst",
            category="Report",
        ),
        md=stage("report.md"),
        log=report(
            stage("KERNEL_LOG.md"),
            caption="../../report/captions/kernel_log.rst",
            category="Report",
        ),
        plots=report(
            directory(stage("plots")),
            patterns=["{name}.png"],
            caption="../../report/captions/plots.rst",
            category="Plots",
        ),
    log:
        stage("logs/report.log"),
    params:
        bytecode=bytecode_cache,
        compared=compared_sets,
    script:
        "../scripts/report.py"


rule publish:
    input:
        rules.report.output,
    output:
        summary=f"{RUN_CONFIG['results']}/{{set}}/summary.csv",
        html=f"{RUN_CONFIG['results']}/{{set}}/report.html",
    log:
        f"{RUN_CONFIG['staging']}/logs/publish-{{set}}.log",
    params:
        bytecode=bytecode_cache,
        # STAGE and RESULTS, derived from the files (all report outputs lie in STAGE)
        stage=lambda wildcards, input: os.path.dirname(input[0]),
        results=lambda wildcards, output: os.path.dirname(output.summary),
    script:
        "../scripts/publish.py"


rule compare:
    input:
        a=f"{RUN_CONFIG['results']}/{{a}}/summary.csv",
        b=f"{RUN_CONFIG['results']}/{{b}}/summary.csv",
    output:
        csv=f"{RUN_CONFIG['results']}/compare/{{a}}__vs__{{b}}.csv",
        png=f"{RUN_CONFIG['results']}/compare/{{a}}__vs__{{b}}.png",
    log:
        f"{RUN_CONFIG['results']}/compare/{{a}}__vs__{{b}}.log",
    wildcard_constraints:
        a="[a-z0-9_-]+",
        b="[a-z0-9_-]+",
    params:
        bytecode=bytecode_cache,
        threshold=RUN_CONFIG["compare"]["threshold"],
        min_us=RUN_CONFIG["compare"]["min_us"],
    script:
        "../scripts/compare.py"
