rule survey:
    output:
        json=stage("survey.json"),
    log:
        stage("logs/survey.log"),
    resources:
        gpu=GPU,
        gpu_model=gpu_model,
    params:
        env=job_env,
    script:
        "../scripts/survey.py"


rule build_cuda:
    input:
        sources=CUDA_SOURCES,
    output:
        json=stage("build/build.json"),
        resources=report(
            stage("build/resources.csv"),
            caption="../../report/captions/resources.rst",
            category="CUDA build",
        ),
    log:
        stage("logs/build_cuda.log"),
    params:
        kernel_dirs=config["kernel_dirs"],
    script:
        "../scripts/build_cuda.py"
