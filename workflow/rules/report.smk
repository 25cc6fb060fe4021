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
        # the whole config: its hash names the run in environment.json
        config=sorted_keys(config),
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
        compared=compared_sets,
    script:
        "../scripts/report.py"


rule publish:
    input:
        rules.report.output,
    output:
        summary=f"{config['results']}/{{set}}/summary.csv",
        html=f"{config['results']}/{{set}}/report.html",
    log:
        f"{config['staging']}/logs/publish-{{set}}.log",
    params:
        # STAGE and RESULTS, derived from the files (all report outputs lie in STAGE)
        stage=lambda wildcards, input: os.path.dirname(input[0]),
        results=lambda wildcards, output: os.path.dirname(output.summary),
    script:
        "../scripts/publish.py"


rule compare:
    input:
        a=f"{config['results']}/{{a}}/summary.csv",
        b=f"{config['results']}/{{b}}/summary.csv",
    output:
        csv=f"{config['results']}/compare/{{a}}__vs__{{b}}.csv",
        png=f"{config['results']}/compare/{{a}}__vs__{{b}}.png",
    log:
        f"{config['results']}/compare/{{a}}__vs__{{b}}.log",
    wildcard_constraints:
        a="[a-z0-9_-]+",
        b="[a-z0-9_-]+",
    params:
        threshold=config["compare"]["threshold"],
        min_us=config["compare"]["min_us"],
    script:
        "../scripts/compare.py"
