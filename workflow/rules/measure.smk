rule measure:
    input:
        code=kernel_code,
        build=rules.build_cuda.output.json,
        survey=rules.survey.output.json,
    output:
        check=stage("check/{kernel}.csv"),
        bench=stage("bench/{kernel}.csv"),
        samples=stage("bench/{kernel}.samples.json.gz"),
    log:
        stage("logs/measure/{kernel}.log"),
    resources:
        gpu=1,
    params:
        kernel=kernel_config,
        timing=config["timing"],
    script:
        "../scripts/measure.py"


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
