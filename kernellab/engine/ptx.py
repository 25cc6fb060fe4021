"""Intermediate code and machine code of every Triton and CUDA implementation.

Triton kernels are cross-compiled with ``triton.compile`` for the GPU present (sm_90
where there is none): TTIR, TTGIR, PTX, and SASS through cuobjdump (Triton ships one).
CUDA kernels: the PTX and cubin that build_cuda's resource report compiled (the same flags;
compiled here with ``nvcc -cubin -keep`` where it left none), SASS through cuobjdump. Each output is
scanned for the instructions a step's note may claim (16-byte loads, tensor-core
instructions, fp64 arithmetic, spills...), and the first line of each kind is kept as
evidence for KERNEL_LOG.md.
"""

from __future__ import annotations

import re
from pathlib import Path

from kernellab.engine.registry import Family, Impl
from kernellab.io import write_bytes, write_text

# (label, regex) scanned in PTX and SASS text
PATTERNS = [
    ("16-byte global loads", r"ld\.global(\.nc)?(\.L1::\w+)?(\.L2::\w+)?\.v4\.(b32|f32|u32)|LDG\.E\.128"),
    ("16-byte global stores", r"st\.global\.v4\.(b32|f32|u32)|STG\.E\.128"),
    ("tensor-core wgmma", r"wgmma\.mma_async|HGMMA"),
    ("tensor-core mma", r"\bmma\.sync|HMMA"),
    ("fp64 arithmetic", r"\b(DFMA|DMUL|DADD)\b|\b(fma|mul|add)\.rn\.f64"),
    ("hardware tanh", r"tanh\.approx\.f32|MUFU\.TANH"),
    ("local memory (spills)", r"\b(LDL|STL)\b|ld\.local|st\.local"),
    ("warp shuffles", r"shfl\.sync|\bSHFL\."),
    # \b: "shared.global" (cp.async's state spaces) holds "red.global"; REDG: Hopper's SASS
    ("global atomics", r"\b(RED|REDG|ATOMG)\.|\batom\.global|\bred\.global"),
    ("bulk tensor copy (TMA)", r"cp\.async\.bulk\.tensor|UTMALDG"),
]


def scan(text: str, source: str) -> tuple[dict, list[dict]]:
    """Counts of each pattern, and the first matching line of each as evidence."""
    counts, evidence = {}, []
    lines = text.splitlines()
    for label, rx in PATTERNS:
        pat = re.compile(rx)
        hits = [ln for ln in lines if pat.search(ln)]
        counts[label] = len(hits)
        if hits:
            evidence.append({"label": f"{label} ({source}, {len(hits)} lines)", "line": hits[0].strip()[:200]})
    return counts, evidence


def _highlight(entry: dict, ptx_text: str, sass_text: str) -> None:
    """The entry's highlight counts and evidence lines, from its PTX and its SASS."""
    counts, evidence = scan(ptx_text, "PTX")
    s_counts, s_evidence = scan(sass_text, "SASS")
    entry["highlights"] = {"ptx": counts, "sass": s_counts}
    entry["evidence"] = evidence + s_evidence


def _name_of(kernel) -> str:
    fn = getattr(kernel, "fn", kernel)
    return getattr(fn, "__name__", str(fn))


def triton_entries(family: Family, impl: Impl, dtypes: list[str], out_dir: Path, arch: int) -> list[dict]:
    from kernellab.engine import triton_utils

    entries = []
    for dtype in dtypes:
        if not impl.supports(dtype) or impl.compile_specs is None:
            continue
        specs = impl.compile_specs(dtype)
        for index, spec in enumerate(specs):
            name = _name_of(spec.kernel)
            suffix = f".{index}" if len(specs) > 1 else ""
            stem = f"{impl.key.replace('@', '.')}.{dtype}.{name}{suffix}"
            entry = {"kernel": family.name, "impl_key": impl.key, "dtype": dtype, "source": "triton",
                     "name": name, "config": spec.label, "files": {}, "highlights": {}, "evidence": []}
            try:
                asm = triton_utils.compile_asm(spec, arch)
            except Exception as exc:  # noqa: BLE001 - recorded; the other kernels still compile
                entry.update(status="error", reason=f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
                entries.append(entry)
                continue
            for ext in ("ttir", "ttgir", "ptx"):
                if ext in asm:
                    write_text(out_dir / f"{stem}.{ext}.xz", asm[ext])
                    entry["files"][ext] = f"{stem}.{ext}.xz"
            text = asm.get("ptx", "")
            sass_text, why = "", ""
            if "cubin" in asm:
                cubin = out_dir / f"{stem}.cubin"
                write_bytes(cubin, asm["cubin"])
                sass_text, why = _sass(cubin)
                cubin.unlink()
                if sass_text:
                    write_text(out_dir / f"{stem}.sass.xz", sass_text)
                    entry["files"]["sass"] = f"{stem}.sass.xz"
            _highlight(entry, text, sass_text)
            entry.update(status="ok", reason=why)
            entries.append(entry)
    return entries


def _sass(cubin: Path) -> tuple[str, str]:
    try:
        from kernellab.engine import cuda_build

        text = cuda_build.sass(cubin)
    except Exception as exc:  # noqa: BLE001 - no cuobjdump: PTX is still there
        return "", f"SASS unavailable: {exc}"
    return (text or ""), ("" if text else "SASS unavailable: cuobjdump not found")


def cuda_source_of(family: Family, kernel_name: str, impl: Impl | None = None) -> Path | None:
    """The .cu file an implementation's kernel is compiled from: a CUDA step's own file (which
    instantiates it, from a shared header or not), else the family's first .cu naming it."""
    if impl is not None and impl.source is not None and impl.source.suffix == ".cu":
        return impl.source
    pat = re.compile(rf"\b{re.escape(kernel_name)}\b")
    for path in sorted(family.folder.rglob("*.cu")) if family.folder else []:
        if pat.search(path.read_text()):
            return path
    return None


def split_sass(text: str) -> dict[str, str]:
    """cuobjdump output -> {function name: its SASS}."""
    parts: dict[str, str] = {}
    current, buf = None, []
    for line in text.splitlines():
        m = re.match(r"\s*Function : (\S+)", line)
        if m:
            if current:
                parts[current] = "\n".join(buf)
            current, buf = m.group(1), [line]
        elif current:
            buf.append(line)
    if current:
        parts[current] = "\n".join(buf)
    return parts


def split_ptx(text: str) -> dict[str, str]:
    """PTX module -> {entry name: its body}."""
    parts: dict[str, str] = {}
    for m in re.finditer(r"\.entry\s+(\S+?)\s*\(", text):
        start = m.start()
        end = text.find("\n}", start)
        parts[m.group(1)] = text[start:end + 2 if end >= 0 else len(text)]
    return parts


def cuda_groups(family: Family, keys: list[str]) -> list[list[str]]:
    """The CUDA implementations among ``keys`` in groups that share no .cu file with another
    group: each group is one task of the ptx rule (a shared file is compiled once per task)."""
    groups: list[tuple[set, list[str]]] = []
    for key in keys:
        impl = family.impls[key]
        if impl.backend != "cuda":
            continue
        files = {cuda_source_of(family, k, impl) for k in impl.cuda_kernels} - {None}
        merged = [g for g in groups if g[0] & files]
        files_all, members = set(files), []
        for g in merged:
            files_all |= g[0]
            members += g[1]
            groups.remove(g)
        groups.append((files_all, members + [key]))
    return [members for _, members in groups]


def timed_entries_for(kernel: str, keys: list[str], dtypes: list[str], out_dir: Path, arch: int,
                      build_dir: Path | None = None, kernel_dirs=None) -> tuple[float, list[dict]]:
    """``entries_for`` and the seconds it took (the rule logs its slowest tasks); the family is
    the one ``kernel_dirs`` holds (loaded by the forking process already: Python's modules)."""
    import time

    from kernellab.engine import registry

    t0 = time.perf_counter()
    family = registry.load(kernel_dirs).family(kernel)
    entries = entries_for(family, keys, dtypes, out_dir, arch, build_dir)
    return time.perf_counter() - t0, entries


def entries_for(family: Family, keys: list[str], dtypes: list[str], out_dir: Path, arch: int,
                build_dir: Path | None = None) -> list[dict]:
    """Index entries of some implementations of one family (one task of the ptx rule's
    process pool; CUDA implementations sharing a .cu file share its compilation)."""
    entries, cache = [], {}
    for key in keys:
        impl = family.impls[key]
        if impl.backend == "triton":
            entries += triton_entries(family, impl, dtypes, out_dir, arch)
        elif impl.backend == "cuda":
            entries += cuda_entries(family, impl, out_dir, arch, cache, build_dir)
    return entries


def cuda_entries(family: Family, impl: Impl, out_dir: Path, arch: int, cache: dict,
                 build_dir: Path | None = None) -> list[dict]:
    """PTX and SASS of the CUDA kernels an implementation launches: from ``build_dir`` (build_cuda's
    output folder) where it holds them, else compiled."""
    from kernellab.engine import cuda_build

    entries = []
    for kname in impl.cuda_kernels:
        stem = f"{impl.key.replace('@', '.')}.{kname}"
        entry = {"kernel": family.name, "impl_key": impl.key, "dtype": "all", "source": "cuda", "name": kname,
                 "files": {}, "highlights": {}, "evidence": []}
        src = cuda_source_of(family, kname, impl)
        if src is None:
            entry.update(status="error", reason=f"no .cu file under {family.folder} defines {kname}")
            entries.append(entry)
            continue
        try:
            if src not in cache:
                built = cuda_build.built_ptx_and_sass(build_dir, src, arch) if build_dir else None
                cache[src] = built or cuda_build.ptx_and_sass(src, arch)
            ptx_text, sass_text = cache[src]
        except Exception as exc:  # noqa: BLE001 - nvcc absent or failed: recorded
            entry.update(status="unavailable", reason=f"{type(exc).__name__}: {str(exc).splitlines()[0][:200]}")
            entries.append(entry)
            continue
        ptx_fns = {k: v for k, v in split_ptx(ptx_text).items() if cuda_build.base_name(k) == kname}
        sass_fns = {k: v for k, v in split_sass(sass_text or "").items() if cuda_build.base_name(k) == kname}
        ptx_part = "\n\n".join(ptx_fns[k] for k in sorted(ptx_fns))
        sass_part = "\n\n".join(sass_fns[k] for k in sorted(sass_fns))
        if ptx_part:
            write_text(out_dir / f"{stem}.ptx.xz", ptx_part)
            entry["files"]["ptx"] = f"{stem}.ptx.xz"
        if sass_part:
            write_text(out_dir / f"{stem}.sass.xz", sass_part)
            entry["files"]["sass"] = f"{stem}.sass.xz"
        _highlight(entry, ptx_part, sass_part)
        entry.update(status="ok", reason="" if sass_part else "SASS unavailable (cuobjdump not found)")
        entries.append(entry)
    return entries
