"""Compare two result sets (two machines, or two runs on one), nvbench-style.

Each common case (kernel, implementation, shape, dtype, parameters) is classified
SAME, FASTER, SLOWER or AMBIGUOUS from the two sample intervals and a threshold
(``stats.classify``). B is compared against A: FASTER means B is faster.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from kernellab.engine.stats import classify

KEY = ["kernel", "impl_key", "shape", "dtype", "params"]
# time_ratio: b's median over a's (above 1, b is slower); change = time_ratio - 1; verdict: b
# against a (FASTER: b is faster). The report's "time ratio other / this" runs the same way.
COLUMNS = KEY + ["median_a_us", "median_b_us", "time_ratio", "change", "verdict", "a", "b"]


def _load(path: Path) -> pd.DataFrame:
    df = pd.read_csv(path, keep_default_na=False, na_values=["", "nan", "NaN"])
    df["params"] = df["params"].fillna("").astype(str)
    df["shape"] = df["shape"].astype(str)
    ok = (df["status"] == "ok") & (df.get("check_status", "ok") == "ok")
    return df[ok]


def compare_sets(summary_a: Path, summary_b: Path, name_a: str, name_b: str, threshold: float = 0.03,
                 min_us: float = 0.0) -> pd.DataFrame:
    a, b = _load(summary_a), _load(summary_b)
    merged = a.merge(b, on=KEY, suffixes=("_a", "_b"))
    rows = []
    for _, r in merged.iterrows():
        ra = {k: r[f"{k}_a"] for k in ("median_us", "p20_us", "p80_us", "stdrel")}
        rb = {k: r[f"{k}_b"] for k in ("median_us", "p20_us", "p80_us", "stdrel")}
        verdict, change = classify(ra, rb, threshold)
        rows.append({**{k: r[k] for k in KEY}, "median_a_us": ra["median_us"], "median_b_us": rb["median_us"],
                     "time_ratio": change + 1, "change": change, "verdict": verdict, "a": name_a, "b": name_b})
    df = pd.DataFrame(rows, columns=COLUMNS)
    if min_us > 0:
        df = df[df["median_a_us"] > min_us]
    return df.sort_values(KEY, kind="stable").reset_index(drop=True)


def verdict_counts(df: pd.DataFrame) -> dict:
    return {v: int((df["verdict"] == v).sum()) for v in ("SAME", "FASTER", "SLOWER", "AMBIGUOUS")}


def plot(df: pd.DataFrame, path: Path, title: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    colors = {"SAME": "#888888", "FASTER": "#2a9d4a", "SLOWER": "#d1495b", "AMBIGUOUS": "#e0a030"}
    fig, ax = plt.subplots(figsize=(7, 4.5), dpi=100)
    for verdict, color in colors.items():
        part = df[df["verdict"] == verdict]
        ax.scatter(part["median_a_us"], part["median_b_us"], s=12, color=color, label=f"{verdict} ({len(part)})")
    if len(df):
        lo = float(min(df["median_a_us"].min(), df["median_b_us"].min()))
        hi = float(max(df["median_a_us"].max(), df["median_b_us"].max()))
        ax.plot([lo, hi], [lo, hi], color="black", lw=0.8, ls="--")
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel(f"{df['a'].iloc[0] if len(df) else 'A'}: median us")
    ax.set_ylabel(f"{df['b'].iloc[0] if len(df) else 'B'}: median us")
    ax.set_title(title)
    ax.legend(fontsize=8)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    from kernellab.io import atomic_path

    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", metadata={"Software": None})
    plt.close(fig)
