rule profile:
    input:
        code=kernel_code,
        build=rules.build_cuda.output.json,
    output:
        csv=report(
            stage("profile/{kernel}.csv"),
            caption="../../report/captions/profile.rst",
            category="Profiles",
            labels={"kernel": "{kernel}"},
        ),
        traces=directory(stage("profile/{kernel}")),
    log:
        stage("logs/profile/{kernel}.log"),
    resources:
        gpu=1,
    params:
        kernel=kernel_config,
        timing=config["timing"],
    script:
        "../scripts/profile.py"


rule ptx:
    input:
        code=kernel_code,
    output:
        index=stage("ptx/{kernel}/index.json"),
    log:
        stage("logs/ptx/{kernel}.log"),
    params:
        kernel=kernel_config,
        timing=config["timing"],
    script:
        "../scripts/ptx.py"


rule ncu:
    input:
        code=kernel_code,
        build=rules.build_cuda.output.json,
    output:
        csv=stage("ncu/{kernel}.csv"),
    log:
        stage("logs/ncu/{kernel}.log"),
    resources:
        gpu=1,
    params:
        kernel=kernel_config,
        timing=config["timing"],
    script:
        "../scripts/ncu.py"
