"""The commit a checkout is at, read from its ``.git`` files: where no ``git`` program runs (the
container's image has none, and the checkout is mounted in it) the commit is still known.

Covers what a clone or a worktree holds: ``HEAD`` naming a commit (detached) or a branch, the branch
a loose ref or a line of ``packed-refs``, and a worktree's ``.git`` file (``gitdir: ...``) whose refs
live in the repository it names (``commondir``).
"""

from __future__ import annotations

import re
from pathlib import Path

SHA = re.compile(r"[0-9a-f]{40}")


def _git_dir(root: Path) -> Path | None:
    """The git directory of the checkout holding ``root``: the nearest ``.git`` upwards."""
    for folder in (root, *root.parents):
        dot = folder / ".git"
        if dot.is_dir():
            return dot
        if dot.is_file():
            m = re.match(r"gitdir:\s*(.+)", dot.read_text(encoding="utf-8", errors="replace").strip())
            return (folder / m.group(1).strip()).resolve() if m else None
    return None


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return ""


def head_commit(root: Path) -> str | None:
    """The full hash of the commit HEAD names in the checkout holding ``root``, or None (no
    ``.git`` there, or one that does not resolve: a branch with no commit, a gitdir out of reach)."""
    git_dir = _git_dir(Path(root).resolve())
    if git_dir is None:
        return None
    head = _read(git_dir / "HEAD")
    if SHA.fullmatch(head):
        return head
    m = re.fullmatch(r"ref:\s*(refs/\S+)", head)
    if not m:
        return None
    ref = m.group(1)
    common = git_dir / _read(git_dir / "commondir") if _read(git_dir / "commondir") else git_dir
    for base in (git_dir, common):
        loose = _read(base / ref)
        if SHA.fullmatch(loose):
            return loose
    for line in _read(common / "packed-refs").splitlines():
        sha, _, name = line.partition(" ")
        if name.strip() == ref and SHA.fullmatch(sha):
            return sha
    return None
