"""From loaded results to the report's view: each section is built by its own module.

The HTML and Markdown templates render the same view, so both pages say the same
thing. Every table cell is plain text here; escaping is the templates' job.
"""

from __future__ import annotations

import yaml

from kernellab.report import fmt
from kernellab.report.code import assign_resources, ncu_table, ptx_views, resources_table
from kernellab.report.comparison import compare_verdicts, comparison_view
from kernellab.report.figures import kernel_images, roofline_image
from kernellab.report.fmt import html_id
from kernellab.report.kernel_tables import autotune_tables, cases_table, correctness_table, profile_table
from kernellab.report.ladder import analyse_all
from kernellab.report.load import Results, is_valid
from kernellab.report.model import (
    annotate,
    ceiling_notes,
    kernel_metric,
    metric_label,
)
from kernellab.report.outcomes import absences_table, failures_table, skipped_table
from kernellab.report.overview import environment_table, hardware_table, method
from kernellab.report.summary import geomean_table, ours_vs_field, summary_table
from kernellab.report.tables import Table, kv_table
from kernellab.report.views import KernelView, View


def _kernel_views(res: Results, kernels: list[str], metrics: dict[str, str], ladders: list,
                  workers: int) -> list[KernelView]:
    """A section per kernel (its figures drawn on up to ``workers`` processes), then one for the
    CUDA kernels of no listed family."""
    res_by_kernel, res_rest = assign_resources(res)
    images = kernel_images(res, metrics, workers)
    kviews = []
    for k in kernels:
        m = metrics[k]
        kv = KernelView(name=k, id=html_id("kernel", k), metric=m, metric_label=metric_label(m))
        kv.images = images[k]
        if not kv.images:
            kv.plot_note = "No correct measurement to plot."
        kv.cases = cases_table(res, k, m)
        kv.correctness, kv.correctness_source = correctness_table(res, k)
        kv.correctness_failed = Table(
            kv.correctness.columns,
            kv.correctness.numeric,
            [r for r in kv.correctness.rows if r.flag == "bad"],
        )
        kv.profile = profile_table(res, k)
        kv.autotune_winners, kv.autotune_all = autotune_tables(res, k)
        kv.ptx = ptx_views(res, k)
        kv.resources = resources_table(res_by_kernel.get(k, []))
        kv.ncu = ncu_table(res, k)
        kv.ladders = [lv for lv in ladders if lv.kernel == k]
        kviews.append(kv)
    if res_rest:
        extra = KernelView(
            name="other CUDA kernels",
            id="kernel-unassigned",
            metric="gbps",
            metric_label="GB/s",
            title="Other CUDA kernels (no listed family)",
        )
        extra.resources = resources_table(res_rest)
        kviews.append(extra)
    return kviews


def _software(env: dict) -> tuple[str, Table, str]:
    """The run's config as YAML, its software versions and its git commit, from environment.json."""
    config = env.get("config")
    try:
        config_yaml = (
            yaml.safe_dump(config, sort_keys=True, default_flow_style=False, allow_unicode=True, width=100)
            if config is not None
            else ""
        )
    except yaml.YAMLError:
        config_yaml = repr(config)
    versions = kv_table(
        [(k, fmt.text(env.get(k)) or fmt.NA)
         for k in ("python", "torch", "triton", "cuda", "driver", "snakemake", "liger-kernel", "quack-kernels",
                   "flash-attn-4")],
        "software",
        "version",
    )
    git = fmt.text(env.get("git_commit")) or fmt.NA
    if fmt.to_bool(env.get("git_dirty")):
        git += " (working tree had uncommitted changes)"
    return config_yaml, versions, git


def build(res: Results, others: list[Results], workers: int = 1) -> View:
    """The report's view of ``res`` compared with ``others``; figures are drawn on up to
    ``workers`` processes."""
    annotate(res)
    for o in others:
        annotate(o)
    kernels = res.kernels()
    metrics = {k: kernel_metric(res, k) for k in kernels}
    ladders = analyse_all(res)
    kviews = _kernel_views(res, kernels, metrics, ladders, workers)
    roof, roof_note = roofline_image(res)
    field = ours_vs_field(res, metrics)
    env = res.environment
    config_yaml, versions, git = _software(env)
    return View(
        hardware=res.hardware,
        device_name=fmt.text(res.survey.get("device_name")) or fmt.text(env.get("gpu_name")),
        is_cpu=res.is_cpu,
        warnings=list(res.warnings),
        hardware_table=hardware_table(res),
        environment_table=environment_table(res),
        method=method(res),
        failures=failures_table(res),
        absences=absences_table(res),
        skipped=skipped_table(res),
        summary=summary_table(res, metrics),
        geomean=geomean_table(res),
        ours=field[0],
        ours_shapes=field[1],
        roofline=roof,
        roofline_note=roof_note,
        ceiling_notes=ceiling_notes(res),
        kernels=kviews,
        comparisons=[comparison_view(res, o) for o in others],
        compare_verdicts=compare_verdicts(res),
        command=fmt.text(env.get("command")),
        versions=versions,
        config_yaml=config_yaml,
        config_hash=fmt.text(env.get("config_hash")) or fmt.NA,
        git=git,
        n_rows=len(res.summary),
        n_valid=sum(1 for r in res.summary if is_valid(r)),
        run_id=fmt.text(env.get("run_id")) or fmt.NA,
    )
