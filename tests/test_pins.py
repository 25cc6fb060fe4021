"""Version pins agree across pyproject.toml, envs/requirements*.txt, envs/kernellab.yaml and the Dockerfile.

Each file is read into {package: [specifier, ...]}; a package named by two or more files must have one exact
version (``==``) everywhere, and every looser specifier (``pyyaml>=6``) must admit that version. The one
deliberate exception is torch in the image: the Dockerfile keeps the base image's CUDA build (its torch pin
is the base image tag) and leaves requirements.txt's torch line, the CPU/CI pin, out of what it installs;
tests below check both halves of that.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
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
    """key=value pairs of a LABEL or ARG line (values may be double-quoted)."""
    return {m.group(1): m.group(2) if m.group(2) is not None else m.group(3)
            for m in re.finditer(r'([\w.\-]+)=(?:"([^"]*)"|(\S*))', args)}


def read_dockerfile(path: Path) -> dict:
    """The image's base tag, ARG defaults, LABELs (ARGs substituted) and explicit pins.

    ``pins`` holds what the image installs at a known version: the versions its labels declare
    (``io.kernellab.<package>.version``; cuda is no Python package and is left out), ``pip install
    name==version`` arguments, and the requirement files it installs with ``-r`` (by their COPY source).
    """
    inst = dockerfile_instructions(path.read_text())
    base = next(args for word, args in inst if word == "FROM").split()[0]
    image, _, tag = base.partition(":")
    args: dict[str, str] = {}
    labels: dict[str, str] = {}
    copies: dict[str, str] = {}
    runs: list[str] = []
    for word, rest in inst:
        if word == "ARG":
            args.update(_pairs(rest))
        elif word == "LABEL":
            for key, value in _pairs(rest).items():
                labels[key] = re.sub(r"\$\{(\w+)\}", lambda m: args.get(m.group(1), m.group(0)), value)
        elif word == "COPY":
            parts = [p for p in rest.split() if not p.startswith("--")]
            copies[parts[-1]] = parts[0]
        elif word == "RUN":
            runs.append(rest)
    pins: Pins = {}
    for key, value in labels.items():
        m = re.fullmatch(r"io\.kernellab\.([\w\-]+)\.version", key)
        if m and m.group(1) != "cuda":
            pins.setdefault(canonicalize_name(m.group(1)), []).append(f"=={value}")
    requirement_files = []
    for run in runs:
        for command in re.split(r"&&|;", run):
            if not re.search(r"\bpip install\b", command):
                continue
            tokens = command.split()
            for i, token in enumerate(tokens):
                if token in ("-r", "--requirement") and i + 1 < len(tokens):
                    requirement_files.append(tokens[i + 1])
                elif "==" in token and not token.startswith("-"):
                    _add(pins, token.strip("'\""))
    return {"image": image, "tag": tag, "args": args, "labels": labels, "pins": pins,
            "copies": copies, "runs": runs, "requirement_files": requirement_files}


def collect(root: Path) -> dict[str, Pins]:
    """Every file's pins, by file name relative to root."""
    docker = read_dockerfile(root / "Dockerfile")
    return {
        "pyproject.toml": read_pyproject(root / "pyproject.toml"),
        "envs/requirements.txt": read_requirements(root / "envs" / "requirements.txt"),
        "envs/requirements-test.txt": read_requirements(root / "envs" / "requirements-test.txt"),
        "envs/kernellab.yaml": read_conda(root / "envs" / "kernellab.yaml"),
        "Dockerfile": {k: v for k, v in docker["pins"].items() if k not in BASE_IMAGE_PACKAGES},
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
    labels = docker["labels"]
    assert labels["io.kernellab.torch.version"] == m["torch"], (labels, docker["tag"])
    assert labels["io.kernellab.cuda.version"] == m["cuda"], (labels, docker["tag"])
    assert labels["org.opencontainers.image.base.name"].endswith(f"{docker['image']}:{docker['tag']}")
    # the Nsight Compute package is the one of the base image's CUDA version
    cuda_pkg = "cuda-nsight-compute-" + m["cuda"].replace(".", "-")
    assert labels["io.kernellab.nsight-compute.package"] == cuda_pkg
    assert any(f'"{cuda_pkg}={m["cuda"]}.' in run for run in docker["runs"]), f"{cuda_pkg} is not installed"
    # and every CUDA apt package is of that version: cuda-<name>-13-0="13.0.*"
    cuda_pkgs = [p for run in docker["runs"] for p in re.findall(r"\bcuda-[a-z-]+?-\d+-\d+=\S+", run)]
    assert len(cuda_pkgs) >= 2, cuda_pkgs
    for pkg in cuda_pkgs:
        name, version = pkg.strip("'\"").split("=")
        major, minor = name.rsplit("-", 2)[1:]
        assert f"{major}.{minor}" == m["cuda"] and version.startswith(f"{m['cuda']}."), (pkg, docker["tag"])
    for key in ("title", "version", "source", "licenses", "description"):
        assert labels.get(f"org.opencontainers.image.{key}"), f"label org.opencontainers.image.{key} missing"


def test_dockerfile_installs_requirements_without_torch():
    """The image installs envs/requirements.txt, minus its torch line, and keeps the base image's torch."""
    docker = read_dockerfile(ROOT / "Dockerfile")
    copied = {dest: src for dest, src in docker["copies"].items() if src == "envs/requirements.txt"}
    assert copied, "the Dockerfile does not COPY envs/requirements.txt"
    (dest,) = copied
    filters = [run for run in docker["runs"] if dest in run and "grep -v" in run and "torch" in run]
    assert filters, "the Dockerfile does not filter torch out of envs/requirements.txt"
    assert docker["requirement_files"], "the Dockerfile does not pip install -r a requirements file"
    # the filter removes exactly the torch line
    pattern = re.search(r"grep -v -E '([^']+)'", filters[0]).group(1)
    lines = (ROOT / "envs" / "requirements.txt").read_text().splitlines()
    posix = pattern.replace("[[:space:]]", r"\s")
    removed = [ln for ln in lines if re.search(posix, ln)]
    assert removed and all(Requirement(ln).name == "torch" for ln in removed), removed
    torch_label = f"=={docker['args']['TORCH_VERSION']}"
    assert docker["pins"].get("torch", [torch_label]) == [torch_label], docker["pins"]["torch"]


def test_image_version_and_container_name_agree():
    """pyproject's version = the image's version label = the tag of the config's default container."""
    version = read_toml(ROOT / "pyproject.toml")["project"]["version"]
    labels = read_dockerfile(ROOT / "Dockerfile")["labels"]
    assert labels["org.opencontainers.image.version"] == version
    schema = yaml.safe_load((ROOT / "workflow" / "schemas" / "config.schema.yaml").read_text())
    default = schema["properties"]["container"]["default"]
    assert default.endswith(f":{version}"), default
    for name in ("config.yaml", "test.yaml"):
        cfg = yaml.safe_load((ROOT / "config" / name).read_text())
        assert cfg.get("container", default) == default, f"config/{name}: {cfg.get('container')} != {default}"
    # the README's build command produces that image
    image = default.removeprefix("docker://")
    assert f"docker build -t {image} ." in (ROOT / "README.md").read_text(), f"README does not build {image}"


# -- the comparison itself catches planted disagreements -------------------------------------------------


@pytest.fixture()
def tree(tmp_path):
    """A copy of the files the pin test reads."""
    for rel in ("pyproject.toml", "Dockerfile", "envs/requirements.txt", "envs/requirements-test.txt",
                "envs/kernellab.yaml"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(ROOT / rel, tmp_path / rel)
    assert compare(collect(tmp_path)) == []
    return tmp_path


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def test_compare_catches_conda_pin_disagreement(tree):
    pin = next(s for s in read_conda(tree / "envs" / "kernellab.yaml")["triton"])
    _edit(tree / "envs" / "kernellab.yaml", f"triton{pin}", "triton==9.9.9")
    problems = compare(collect(tree))
    assert len(problems) == 1, problems
    assert problems[0].startswith("triton: pins disagree")
    assert "envs/kernellab.yaml: ==9.9.9" in problems[0] and "envs/requirements.txt" in problems[0]


def test_compare_catches_dockerfile_label_disagreement(tree):
    args = read_dockerfile(tree / "Dockerfile")["args"]
    _edit(tree / "Dockerfile", f"TRITON_VERSION={args['TRITON_VERSION']}", "TRITON_VERSION=3.0.0")
    problems = compare(collect(tree))
    assert any(p.startswith("triton:") and "Dockerfile: ==3.0.0" in p for p in problems), problems


def test_compare_catches_dockerfile_pip_pin(tree):
    _edit(tree / "Dockerfile", "python -m pip check",
          "python -m pip install --no-cache-dir snakemake==1.0.0 && python -m pip check")
    problems = compare(collect(tree))
    assert any(p.startswith("snakemake:") and "Dockerfile" in p for p in problems), problems


def test_compare_checks_loose_specifiers(tree):
    _edit(tree / "pyproject.toml", '"numpy>=1.26"', '"numpy<2"')
    problems = compare(collect(tree))
    assert len(problems) == 1 and problems[0].startswith("numpy: pyproject.toml asks <2"), problems


def test_compare_catches_requirements_pin_disagreement(tree):
    _edit(tree / "envs" / "requirements-test.txt", "ruff==", "ruff==0.0.1\n# was ")
    problems = compare(collect(tree))
    assert any(p.startswith("ruff:") and "pyproject.toml" in p and "envs/requirements-test.txt" in p
               for p in problems), problems


def test_gpu_constraints_pair_the_base_image_torch_with_the_triton_pin(root):
    gpu = read_requirements(root / "envs" / "constraints-gpu.txt")
    base = re.search(r"^FROM pytorch/pytorch:(\d+\.\d+\.\d+)-", (root / "Dockerfile").read_text(), re.M)
    assert gpu["torch"] == [f"=={base.group(1)}"]
    assert gpu["triton"] == read_requirements(root / "envs" / "requirements.txt")["triton"]
