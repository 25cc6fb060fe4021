rule check:
    input:
        code=kernel_code,
        build=rules.build_cuda.output.json,
    output:
        csv=stage("check/{kernel}.csv"),
    log:
        stage("logs/check/{kernel}.log"),
    resources:
        gpu=1,
    params:
        kernel=kernel_config,
        timing=config["timing"],
    script:
        "../scripts/check.py"


rule bench:
    input:
        code=kernel_code,
        build=rules.build_cuda.output.json,
        survey=rules.survey.output.json,
    output:
        csv=stage("bench/{kernel}.csv"),
        samples=stage("bench/{kernel}.samples.json.gz"),
    log:
        stage("logs/bench/{kernel}.log"),
    resources:
        gpu=1,
    params:
        kernel=kernel_config,
        timing=config["timing"],
    script:
        "../scripts/bench.py"


rule autotune:
    input:
        code=kernel_code,
    output:
        csv=stage("autotune/{kernel}.csv"),
    log:
        stage("logs/autotune/{kernel}.log"),
    resources:
        gpu=1,
    params:
        kernel=kernel_config,
        timing=config["timing"],
    script:
        "../scripts/autotune.py"
