"""Version pins agree across pyproject.toml, envs/requirements*.txt, envs/kernellab.yaml and the Dockerfile.

Each file is read into {package: [specifier, ...]}; a package named by two or more files must have one exact
version (``==``) everywhere, and every looser specifier (``pyyaml>=6``) must admit that version. The one
deliberate exception is torch in the GPU image: its flavour keeps the base image's CUDA build (its torch pin
is the base image tag) and leaves requirements.txt's torch line, the CPU/CI pin, out of what it installs;
the CPU flavour installs the CPU build of that pin. Tests below check each flavour.
"""

from __future__ import annotations

import re
from pathlib import Path

import yaml
from packaging.requirements import InvalidRequirement, Requirement
from packaging.utils import canonicalize_name
from packaging.version import Version

ROOT = Path(__file__).resolve().parents[1]

# Packages the image takes from its base image rather than from envs/requirements.txt.
BASE_IMAGE_PACKAGES = {"torch"}
TAG_RE = re.compile(r"^(?P<torch>\d+\.\d+\.\d+)-cuda(?P<cuda>\d+\.\d+)-cudnn(?P<cudnn>\d+)-devel$")

Pins = dict[str, list[str]]  # canonical package name -> specifiers ("==3.6.0", ">=6", "")


def read_toml(path: Path) -> dict:
    import tomllib  # stdlib from Python 3.11 (imported here: ruff's isort would class it by target-version)

    return tomllib.loads(path.read_text())


def _add(pins: Pins, line: str) -> None:
    try:
        req = Requirement(line)
    except InvalidRequirement as exc:
        raise AssertionError(f"cannot parse requirement {line!r}: {exc}") from None
    pins.setdefault(canonicalize_name(req.name), []).append(str(req.specifier))


def read_requirements(path: Path) -> Pins:
    """A pip requirements file, following ``-r other.txt``; options (``--extra-index-url``) are skipped."""
    pins: Pins = {}
    for raw in path.read_text().splitlines():
        line = raw.split(" #", 1)[0].strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith(("-r ", "--requirement ")):
            for name, specs in read_requirements(path.parent / line.split(None, 1)[1]).items():
                pins.setdefault(name, []).extend(specs)
        elif not line.startswith("-"):
            _add(pins, line)
    return pins


def read_pyproject(path: Path) -> Pins:
    """[project] dependencies and optional dependencies."""
    project = read_toml(path)["project"]
    pins: Pins = {}
    for line in project.get("dependencies", []):
        _add(pins, line)
    for group in project.get("optional-dependencies", {}).values():
        for line in group:
            _add(pins, line)
    return pins


def read_conda(path: Path) -> Pins:
    """The pip section of a conda environment file (the conda packages are python and pip)."""
    pins: Pins = {}
    for dep in yaml.safe_load(path.read_text())["dependencies"]:
        if isinstance(dep, dict):
            for line in dep.get("pip", []):
                if not line.strip().startswith("-"):
                    _add(pins, line)
    return pins


def dockerfile_instructions(text: str) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined and comments dropped."""
    out: list[tuple[str, str]] = []
    current = ""
    for raw in text.splitlines():
        if raw.strip().startswith("#") or (current and not raw.strip()):
            continue  # comment lines (also inside a continuation) and blank continuation lines
        line = raw.rstrip()
        if line.endswith("\\"):
            current += line[:-1] + " "
            continue
        current += line
        if current.strip():
            word, _, rest = current.strip().partition(" ")
            out.append((word.upper(), rest.strip()))
        current = ""
    return out


def _pairs(args: str) -> dict[str, str]:
    """key=value pairs of a LABEL, ENV or ARG line (values may be double-quoted)."""
    return {m.group(1): m.group(2) if m.group(2) is not None else m.group(3)
            for m in re.finditer(r'([\w.\-]+)=(?:"([^"]*)"|(\S*))', args)}


def _subst(value: str, scope: dict[str, str]) -> str:
    return re.sub(r"\$\{(\w+)\}", lambda m: scope.get(m.group(1), m.group(0)), value)


def read_dockerfile(path: Path) -> dict:
    """The Dockerfile's stages and, for each flavour (``FLAVOUR``: gpu, cpu), what its image holds.

    A stage records its base (``from``), ARG defaults (a global ARG, declared before the first FROM,
    reaches a stage that declares its name), LABELs and ENV (variables substituted), COPYs, RUNs and
    explicit pins: the versions its labels declare (``io.kernellab.<package>.version``; cuda is no Python
    package and is left out) and ``pip install name==version`` arguments. A flavour's image is the stage
    ``base-<flavour>`` under the last stage (``FROM base-${FLAVOUR}``): ``flavours[f]`` merges the two,
    the last stage's values winning; ``requirement_files`` are the files a stage installs with ``-r``.
    The GPU base's image and tag are ``image`` and ``tag``.
    """
    inst = dockerfile_instructions(path.read_text())
    global_args: dict[str, str] = {}
    stages: list[dict] = []
    for word, rest in inst:
        if word == "FROM":
            parts = rest.split()
            name = parts[2] if len(parts) >= 3 and parts[1].upper() == "AS" else f"stage{len(stages)}"
            parent = next((st for st in stages if st["name"] == parts[0]), None)
            stages.append({"name": name, "from": parts[0], "args": {}, "labels": {}, "copies": {}, "runs": [],
                           "env": dict(parent["env"]) if parent else {}, "pins": {}, "requirement_files": []})
            continue
        if word == "ARG":
            name, eq, default = rest.partition("=")
            target = stages[-1]["args"] if stages else global_args
            if eq:
                target[name] = default.strip('"')
            elif stages and name in global_args:
                target[name] = global_args[name]
            continue
        if not stages:
            continue
        st = stages[-1]
        scope = {**st["env"], **st["args"]}
        if word == "LABEL":
            st["labels"].update({k: _subst(v, scope) for k, v in _pairs(rest).items()})
        elif word == "ENV":
            st["env"].update({k: _subst(v, scope) for k, v in _pairs(rest).items()})
        elif word == "COPY":
            parts = [p for p in rest.split() if not p.startswith("--")]
            st["copies"][parts[-1]] = parts[0]
        elif word == "RUN":
            st["runs"].append(rest)
            for command in re.split(r"&&|;", rest):
                if not re.search(r"\bpip install\b", command):
                    continue
                tokens = command.split()
                for i, token in enumerate(tokens):
                    if token in ("-r", "--requirement") and i + 1 < len(tokens):
                        st["requirement_files"].append(tokens[i + 1])
                    elif "==" in token and not token.startswith("-"):
                        _add(st["pins"], _subst(token.strip("'\""), scope))
    for st in stages:
        for key, value in st["labels"].items():
            m = re.fullmatch(r"io\.kernellab\.([\w\-]+)\.version", key)
            if m and m.group(1) != "cuda":
                st["pins"].setdefault(canonicalize_name(m.group(1)), []).append(f"=={value}")
    by_name = {st["name"]: st for st in stages}
    last = stages[-1]
    flavours = {}
    for flavour in ("gpu", "cpu"):
        base = by_name[_subst(last["from"], {**global_args, "FLAVOUR": flavour})]
        pins: Pins = {}
        for st in (base, last):
            for name, specs in st["pins"].items():
                pins.setdefault(name, []).extend(specs)
        flavours[flavour] = {
            "base": base, "from": base["from"], "args": {**base["args"], **last["args"]},
            "labels": {**base["labels"], **last["labels"]}, "env": {**base["env"], **last["env"]},
            "copies": {**base["copies"], **last["copies"]}, "runs": base["runs"] + last["runs"], "pins": pins,
            "requirement_files": base["requirement_files"] + last["requirement_files"]}
    image, _, tag = by_name["base-gpu"]["from"].partition(":")
    return {"image": image, "tag": tag, "global_args": global_args, "stages": by_name, "last": last,
            "flavours": flavours}


def _without_cpu_label(pins: Pins) -> Pins:
    """``torch==2.13.0+cpu`` compared as the pin it builds, ``torch==2.13.0`` (its CPU wheel)."""
    return {name: [re.sub(r"^(==[^+]+)\+cpu$", r"\1", s) for s in specs] for name, specs in pins.items()}


def collect(root: Path) -> dict[str, Pins]:
    """Every file's pins, by file name relative to root; the Dockerfile once per flavour."""
    docker = read_dockerfile(root / "Dockerfile")
    return {
        "pyproject.toml": read_pyproject(root / "pyproject.toml"),
        "envs/requirements.txt": read_requirements(root / "envs" / "requirements.txt"),
        "envs/requirements-test.txt": read_requirements(root / "envs" / "requirements-test.txt"),
        "envs/kernellab.yaml": read_conda(root / "envs" / "kernellab.yaml"),
        "Dockerfile (gpu)": {k: v for k, v in docker["flavours"]["gpu"]["pins"].items()
                             if k not in BASE_IMAGE_PACKAGES},
        "Dockerfile (cpu)": _without_cpu_label(docker["flavours"]["cpu"]["pins"]),
    }


def compare(sources: dict[str, Pins]) -> list[str]:
    """Disagreements between the files: one message per package, naming the files and their pins."""
    problems = []
    names = sorted({name for pins in sources.values() for name in pins})
    for name in names:
        where = {src: specs for src, pins in sources.items() for specs in [pins.get(name)] if specs}
        if len(where) < 2:
            continue
        exact = {src: {s[2:] for s in specs if s.startswith("==")} for src, specs in where.items()}
        versions = {v for vs in exact.values() for v in vs}
        listing = ", ".join(f"{src}: {' '.join(s or '(any)' for s in specs)}" for src, specs in where.items())
        if len({Version(v) for v in versions}) > 1:
            problems.append(f"{name}: pins disagree ({listing})")
            continue
        if not versions:
            problems.append(f"{name}: no exact (==) pin in any file ({listing})")
            continue
        (version,) = versions
        for src, specs in where.items():
            for spec in specs:
                if spec and not spec.startswith("==") and not Requirement(f"{name}{spec}").specifier.contains(
                    version, prereleases=True
                ):
                    problems.append(
                        f"{name}: {src} asks {spec}, which excludes the pinned {version} ({listing})"
                    )
    return problems


def test_pins_agree():
    problems = compare(collect(ROOT))
    assert not problems, "pins disagree:\n" + "\n".join(problems)


def test_every_runtime_pin_is_exact_in_requirements_and_conda():
    """requirements.txt and the conda file pin each runtime package exactly, the same set of packages."""
    req = read_requirements(ROOT / "envs" / "requirements.txt")
    conda = read_conda(ROOT / "envs" / "kernellab.yaml")
    assert set(req) == set(conda), f"requirements.txt {sorted(req)} vs kernellab.yaml {sorted(conda)}"
    loose = {n: s for n, s in {**req, **conda}.items() if not all(x.startswith("==") for x in s)}
    assert not loose, f"not pinned with ==: {loose}"
    # every runtime dependency of the package is installed by the requirements file
    project = read_toml(ROOT / "pyproject.toml")["project"]
    runtime = {canonicalize_name(Requirement(d).name) for d in project["dependencies"]}
    assert runtime <= set(req), f"in pyproject.toml but not in requirements.txt: {sorted(runtime - set(req))}"


def test_dockerfile_base_image_matches_its_labels():
    docker = read_dockerfile(ROOT / "Dockerfile")
    assert docker["image"] == "pytorch/pytorch", docker["image"]
    m = TAG_RE.match(docker["tag"])
    assert m, f"base image tag {docker['tag']!r} is not <torch>-cuda<x.y>-cudnn<n>-devel (a pinned devel tag)"
    gpu = docker["flavours"]["gpu"]
    labels, runs = gpu["labels"], gpu["runs"]
    assert labels["io.kernellab.flavour"] == "gpu"
    assert labels["io.kernellab.torch.version"] == m["torch"], (labels, docker["tag"])
    assert labels["io.kernellab.cuda.version"] == m["cuda"], (labels, docker["tag"])
    assert labels["org.opencontainers.image.base.name"].endswith(f"{docker['image']}:{docker['tag']}")
    assert (gpu["env"]["KERNELLAB_TORCH_VERSION"], gpu["env"]["KERNELLAB_CUDA_VERSION"]) == (m["torch"], m["cuda"])
    # the Nsight Compute package is the one of the base image's CUDA version
    cuda_pkg = "cuda-nsight-compute-" + m["cuda"].replace(".", "-")
    assert labels["io.kernellab.nsight-compute.package"] == cuda_pkg
    assert any(f'"{cuda_pkg}={m["cuda"]}.' in run for run in runs), f"{cuda_pkg} is not installed"
    # and every CUDA apt package is of that version: cuda-<name>-13-0="13.0.*"
    cuda_pkgs = [p for run in runs for p in re.findall(r"\bcuda-[a-z-]+?-\d+-\d+=\S+", run)]
    assert len(cuda_pkgs) >= 2, cuda_pkgs
    for pkg in cuda_pkgs:
        name, version = pkg.strip("'\"").split("=")
        major, minor = name.rsplit("-", 2)[1:]
        assert f"{major}.{minor}" == m["cuda"] and version.startswith(f"{m['cuda']}."), (pkg, docker["tag"])
    for flavour in ("gpu", "cpu"):
        labels = docker["flavours"][flavour]["labels"]
        for key in ("title", "source", "licenses", "description"):
            assert labels.get(f"org.opencontainers.image.{key}"), f"{flavour}: label org.opencontainers.image.{key}"


def test_dockerfile_cpu_flavour_is_torchs_cpu_build_of_the_requirements_pin():
    """The cpu flavour: Debian bookworm by its release tag, torch's CPU build ("+cpu") of the torch pin of
    envs/requirements.txt, no CUDA; the only flavour that names a torch version itself."""
    docker = read_dockerfile(ROOT / "Dockerfile")
    cpu = docker["flavours"]["cpu"]
    assert cpu["from"] == "debian:bookworm", cpu["from"]
    assert cpu["labels"]["org.opencontainers.image.base.name"] == "docker.io/library/debian:bookworm"
    assert cpu["labels"]["io.kernellab.flavour"] == "cpu"
    assert "io.kernellab.cuda.version" not in cpu["labels"] and cpu["env"]["KERNELLAB_CUDA_VERSION"] == ""
    (want,) = read_requirements(ROOT / "envs" / "requirements.txt")["torch"]
    assert cpu["base"]["pins"]["torch"] == [f"{want}+cpu", want], cpu["base"]["pins"]  # the install, the label
    assert cpu["env"]["KERNELLAB_TORCH_VERSION"] == want.removeprefix("==")
    # each base stage is of its flavour only: no CUDA package on Debian, no Debian python in the GPU image
    assert not any("cuda-" in run for run in cpu["base"]["runs"])
    assert not any("python3-venv" in run for run in docker["flavours"]["gpu"]["base"]["runs"])


def test_dockerfile_installs_requirements_without_torch():
    """Both flavours install envs/requirements.txt, minus its torch line, in the stage they share, and keep
    the torch of their base stage; the checks of versions, the user and the working directory are shared."""
    docker = read_dockerfile(ROOT / "Dockerfile")
    last = docker["last"]
    assert last["from"] == "base-${FLAVOUR}", last["from"]
    copied = {dest: src for dest, src in last["copies"].items() if src == "envs/requirements.txt"}
    assert copied, "the shared stage does not COPY envs/requirements.txt"
    (dest,) = copied
    filters = [run for run in last["runs"] if dest in run and "grep -v" in run and "torch" in run]
    assert filters, "the Dockerfile does not filter torch out of envs/requirements.txt"
    assert last["requirement_files"], "the shared stage does not pip install -r a requirements file"
    # the filter removes exactly the torch line
    pattern = re.search(r"grep -v -E '([^']+)'", filters[0]).group(1)
    lines = (ROOT / "envs" / "requirements.txt").read_text().splitlines()
    posix = pattern.replace("[[:space:]]", r"\s")
    removed = [ln for ln in lines if re.search(posix, ln)]
    assert removed and all(Requirement(ln).name == "torch" for ln in removed), removed
    gpu = docker["flavours"]["gpu"]
    torch_label = f"=={gpu['base']['args']['TORCH_VERSION']}"
    assert gpu["pins"].get("torch", [torch_label]) == [torch_label], gpu["pins"]["torch"]
    # written once: the shared stage holds the version check, the user and the working directory
    for st in docker["stages"].values():
        if st is not last:
            assert not any("useradd" in run or "pip check" in run for run in st["runs"]), st["name"]
    assert any("pip check" in run and "KERNELLAB_TORCH_VERSION" in run for run in last["runs"])
    text = (ROOT / "Dockerfile").read_text()
    assert text.count("USER ") == 1 and text.count("WORKDIR ") == 1


def test_the_image_is_named_by_the_projects_version_alone(tmp_path, monkeypatch):
    """environment.json's container.image, the name the README's and CI's build commands give each
    flavour and the config's default container (a local SIF file: no registry holds the image, and the
    default must not name one) all carry pyproject's version; the Dockerfile names none (a version of
    its own went stale beside pyproject's). A project of another version names its image so."""
    from kernellab.workflow.aggregate import container

    version = read_toml(ROOT / "pyproject.toml")["project"]["version"]
    docker = read_dockerfile(ROOT / "Dockerfile")
    assert "KERNELLAB_VERSION" not in (ROOT / "Dockerfile").read_text()
    readme = (ROOT / "README.md").read_text()
    ci = (ROOT / ".github" / "workflows" / "ci.yml").read_text()
    other = tmp_path / "other"
    other.mkdir()
    (other / "pyproject.toml").write_text('[project]\nname = "kernellab"\nversion = "9.8.7"\n')
    (tmp_path / ".dockerenv").touch()
    for var in ("APPTAINER_CONTAINER", "SINGULARITY_CONTAINER", "KERNELLAB_FLAVOUR"):
        monkeypatch.delenv(var, raising=False)
    for flavour, suffix in (("gpu", ""), ("cpu", "-cpu")):
        env = docker["flavours"][flavour]["env"]
        assert not any(version in value for value in env.values()), env
        monkeypatch.setenv("KERNELLAB_FLAVOUR", env["KERNELLAB_FLAVOUR"])
        name = container(tmp_path, project=ROOT)["image"]
        assert name == f"kernel-lab:{version}{suffix}"
        assert container(tmp_path, project=other)["image"] == f"kernel-lab:9.8.7{suffix}"
        # the name the user builds and CI builds is the one recorded
        flag = "--build-arg FLAVOUR=cpu " if flavour == "cpu" else ""
        assert re.search(rf"docker build {flag}-t {re.escape(name)} \.(\s|$)", readme), name
        assert re.search(rf"tags: {re.escape(name)}$", ci, re.M), name
    assert set(re.findall(r"kernel-lab[:-](\d+(?:\.\d+)*)", readme)) == {version}
    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    default = schema["properties"]["container"]["default"]
    assert default == f"kernel-lab-{version}.sif", default
    for name in ("config.yaml", "test.yaml"):
        cfg = yaml.safe_load((ROOT / "config" / name).read_text())
        assert cfg.get("container", default) == default, f"config/{name}: {cfg.get('container')} != {default}"


def test_gpu_constraints_pair_the_base_image_torch_with_the_triton_pin(root):
    gpu = read_requirements(root / "envs" / "constraints-gpu.txt")
    base = re.search(r"^FROM pytorch/pytorch:(\d+\.\d+\.\d+)-", (root / "Dockerfile").read_text(), re.M)
    assert gpu["torch"] == [f"=={base.group(1)}"]
    assert gpu["triton"] == read_requirements(root / "envs" / "requirements.txt")["triton"]
