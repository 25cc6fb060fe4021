"""Number formatting, Markdown escaping and safe names: small pure functions.

Every string that comes from results or config is data, never markup. HTML pages are
rendered with Jinja2's autoescape; Markdown pages pass every ``{{ value }}`` through
:func:`md_escape` (the Markdown environment's ``finalize``) unless the value is a
:class:`Md` built here on purpose (tables' fixed syntax, fenced code blocks).
"""

from __future__ import annotations

import functools
import hashlib
import math
import re
import unicodedata

from kernellab.rows import to_bool, to_float

NA = "–"  # shown for a missing number


class Md(str):
    """A string that is already Markdown: the Markdown environment prints it as is."""


def is_num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


# ------------------------------------------------------------------ numbers
def _finite(fmt):
    """``fmt`` of a number as a float; NA for what is no finite number (None, "", NaN, text)."""

    @functools.wraps(fmt)
    def format_finite(x, *args, **kwargs) -> str:
        x = to_float(x)
        return fmt(x, *args, **kwargs) if math.isfinite(x) else NA

    return format_finite


@_finite
def us(x) -> str:
    """Microseconds: 3-4 significant digits, thousands separated."""
    a = abs(x)
    if a >= 100:
        return f"{x:,.1f}"
    if a >= 10:
        return f"{x:.2f}"
    if a >= 1:
        return f"{x:.3f}"
    return f"{x:.4f}"


@_finite
def num(x, digits: int = 1) -> str:
    return f"{x:,.{digits}f}"


@_finite
def sig(x, digits: int = 3) -> str:
    """A number with about ``digits`` significant digits, without exponent when sensible."""
    if x == 0:
        return "0"
    a = abs(x)
    if a >= 1e6 or a < 1e-3:
        return f"{x:.{max(digits - 1, 0)}e}"
    decimals = max(digits - 1 - int(math.floor(math.log10(a))), 0)
    return f"{x:,.{decimals}f}"


def throughput(x, metric: str) -> str:
    """GB/s with one decimal; TFLOP/s with 3 significant digits."""
    return num(x, 1) if metric == "gbps" else sig(x, 3)


@_finite
def pct(x, digits: int = 1) -> str:
    return f"{x:.{digits}f}%"


@_finite
def ratio(x) -> str:
    return f"{x:.2f}×" if x >= 0.1 else f"{sig(x, 3)}×"


def faster_side(time_ratio: float, this: str, other: str) -> tuple[str, str] | None:
    """The set a time ratio other / this favours and the factor, formatted: (name, "1.38×");
    None when the times are equal or the ratio is not a positive number."""
    x = to_float(time_ratio)
    if not math.isfinite(x) or x <= 0 or x == 1:
        return None
    return (this, ratio(x)) if x > 1 else (other, ratio(1 / x))


@_finite
def sci(x) -> str:
    return f"{x:.2e}"


@_finite
def integer(x) -> str:
    return f"{int(round(x)):,}"


@_finite
def nbytes(x) -> str:
    for unit, size in (("GiB", 1024**3), ("MiB", 1024**2), ("KiB", 1024)):
        if abs(x) >= size:
            return f"{x / size:.1f} {unit}"
    return f"{int(x)} B"


def yes_no(x) -> str:
    b = to_bool(x)
    return NA if b is None else ("yes" if b else "no")


def text(x) -> str:
    """Any value as display text (None and NaN: empty)."""
    if x is None:
        return ""
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, float):
        return "" if math.isnan(x) else sig(x, 4)
    return str(x)


# ------------------------------------------------------------------ Markdown
_MD_SPECIAL = re.compile(r"([\\`*|\[\]~])")
_ENTITY = re.compile(r"&(?=#?[A-Za-z0-9]+;)")
_LONE_UNDERSCORE = re.compile(r"(?<![A-Za-z0-9])_|_(?![A-Za-z0-9])")


def md_escape(value) -> str:
    """Text for a Markdown paragraph or table cell: one line, no markup, no HTML.

    Backslash-escapes ``\\ ` * | [ ] ~`` and underscores at word edges, turns ``<``,
    ``>`` and entity-like ``&`` into entities, and folds newlines into spaces (a table
    row is one line). Never used on code blocks (their content stays verbatim).
    """
    if isinstance(value, Md):
        return str(value)
    s = text(value)
    s = " ".join(s.splitlines()).strip()
    s = _MD_SPECIAL.sub(r"\\\1", s)
    s = _ENTITY.sub("&amp;", s)
    s = s.replace("<", "&lt;").replace(">", "&gt;")
    s = _LONE_UNDERSCORE.sub(r"\\_", s)
    return s


def md_code_block(content: str, lang: str = "") -> Md:
    """A fenced code block whose fence no line of ``content`` can close."""
    content = content.replace("\r\n", "\n").replace("\r", "\n").rstrip("\n")
    longest = max((len(m) for m in re.findall(r"`+", content)), default=0)
    fence = "`" * max(3, longest + 1)
    lang = re.sub(r"[^A-Za-z0-9_+-]", "", lang)
    return Md(f"{fence}{lang}\n{content}\n{fence}")


def gh_anchor(heading: str) -> str:
    """The anchor GitHub gives a Markdown heading with this (unescaped) text."""
    s = unicodedata.normalize("NFKC", heading).strip().lower()
    s = "".join(ch for ch in s if ch.isalnum() or ch in " -_")
    return s.replace(" ", "-")


def html_id(*parts: str) -> str:
    """An id / file-name stem made of [a-z0-9_-]; a hash keeps distinct inputs distinct."""
    raw = "-".join(parts)
    clean = re.sub(r"[^A-Za-z0-9_-]+", "-", raw).strip("-").lower() or "x"
    if clean != raw:
        clean = f"{clean[:60]}-{hashlib.sha1(raw.encode('utf-8')).hexdigest()[:8]}"
    return clean


def mpl_text(value) -> str:
    """Text safe for a matplotlib label: ``$`` would start mathtext."""
    return text(value).replace("$", r"\$")
