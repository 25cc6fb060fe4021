rule profile:
    input:
        code=kernel_code,
        build=rules.build_cuda.output.json,
    output:
        csv=stage("profile/{kernel}.csv"),
        traces=directory(stage("profile/{kernel}")),
    params:
        kernel=kernel_config,
        timing=config["timing"],
    log:
        stage("logs/profile/{kernel}.log"),
    resources:
        gpu=1,
    script:
        "../scripts/profile.py"


rule ptx:
    input:
        code=kernel_code,
    output:
        index=stage("ptx/{kernel}/index.json"),
    params:
        kernel=kernel_config,
        timing=config["timing"],
    log:
        stage("logs/ptx/{kernel}.log"),
    script:
        "../scripts/ptx.py"


rule ncu:
    input:
        code=kernel_code,
        build=rules.build_cuda.output.json,
    output:
        csv=stage("ncu/{kernel}.csv"),
    params:
        kernel=kernel_config,
        timing=config["timing"],
    log:
        stage("logs/ncu/{kernel}.log"),
    resources:
        gpu=1,
    script:
        "../scripts/ncu.py"
