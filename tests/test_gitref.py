"""Issue 41: a run in the container (no git program in the image, the checkout mounted) recorded
``git_commit: null``. The commit is read from the checkout's .git files, in each shape a clone or a
worktree takes, and agrees with what git says."""

from __future__ import annotations

import subprocess

from kernellab.workflow.aggregate import git_info
from kernellab.workflow.gitref import head_commit


def _git(repo, *args) -> str:
    return subprocess.run(["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t", *args],
                          check=True, capture_output=True, text=True).stdout.strip()


def test_the_commit_is_read_from_the_git_files_as_git_reads_it(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q", "-b", "main")
    assert head_commit(repo) is None  # a branch with no commit yet
    _git(repo, "commit", "-q", "--allow-empty", "-m", "one")
    first = _git(repo, "rev-parse", "HEAD")
    assert head_commit(repo) == first  # a loose branch ref
    (repo / "sub").mkdir()
    assert head_commit(repo / "sub") == first  # from inside the checkout, as git finds it
    _git(repo, "pack-refs", "--all")
    assert not (repo / ".git" / "refs" / "heads" / "main").exists()
    assert head_commit(repo) == first  # packed-refs
    _git(repo, "commit", "-q", "--allow-empty", "-m", "two")
    second = _git(repo, "rev-parse", "HEAD")
    assert head_commit(repo) == second  # the loose ref wins over the packed, older line
    _git(repo, "checkout", "-q", "--detach", first)
    assert head_commit(repo) == first  # detached
    _git(repo, "worktree", "add", "-q", "-b", "side", str(tmp_path / "wt"), second)
    _git(tmp_path / "wt", "commit", "-q", "--allow-empty", "-m", "three")
    assert head_commit(tmp_path / "wt") == _git(tmp_path / "wt", "rev-parse", "HEAD")  # a worktree's .git file
    assert head_commit(tmp_path / "nothing") is None


def test_without_a_git_program_the_run_still_names_its_commit(tmp_path, monkeypatch):
    repo = tmp_path / "repo"
    repo.mkdir()
    _git(repo, "init", "-q")
    _git(repo, "commit", "-q", "--allow-empty", "-m", "one")
    sha = _git(repo, "rev-parse", "HEAD")
    monkeypatch.delenv("KERNELLAB_GIT_COMMIT", raising=False)
    assert git_info(repo) == {"git_commit": sha, "git_dirty": False}
    monkeypatch.setenv("PATH", str(tmp_path / "no-programs"))  # as in the image: no git
    assert git_info(repo) == {"git_commit": sha, "git_dirty": None}  # dirtiness takes git: unknown
