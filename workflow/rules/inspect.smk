rule profile:
    input:
        build=rules.build_cuda.output.json,
    output:
        csv=stage("profile/{kernel}.csv"),
        traces=directory(stage("profile/{kernel}")),
    log:
        stage("logs/profile/{kernel}.log"),
    resources:
        gpu=1,
    script:
        "../scripts/profile.py"


rule ptx:
    output:
        index=stage("ptx/{kernel}/index.json"),
    log:
        stage("logs/ptx/{kernel}.log"),
    script:
        "../scripts/ptx.py"


rule ncu:
    input:
        build=rules.build_cuda.output.json,
    output:
        csv=stage("ncu/{kernel}.csv"),
    log:
        stage("logs/ncu/{kernel}.log"),
    resources:
        gpu=1,
    script:
        "../scripts/ncu.py"
