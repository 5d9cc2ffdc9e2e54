# SPDX-License-Identifier: GPL-2.0
"""The assembled tree: the base as a git commit, then one commit per patch in the series.

build/tree is a git repository whose `base` tag is the unpacked linux-source
tarball and whose later commits are patches/series in order, each carrying the
overlay files (from linux/) its patch names. `export` goes the other way: it turns
the commits after `base` back into patches/ and linux/, so an edit made in the tree
becomes a patch with one command.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

from . import base, paths
from .patchfile import PatchFile, parse, read_series, slug
from .shell import StepError, output, run, step

ASSEMBLED = "refs/testbed/assembled"
STAMP = "testbed-stamp"


def git(*args: str | Path, **kw) -> str:
    return output(["git", "-C", paths.TREE, *args], **kw)


def git_run(*args: str | Path, **kw) -> None:
    run(["git", "-C", paths.TREE, *args], quiet=True, **kw)


def _identity_env(author: str, date: str) -> dict:
    name, _, email = author.partition("<")
    env = dict(os.environ)
    env.update(GIT_AUTHOR_NAME=name.strip(), GIT_AUTHOR_EMAIL=email.rstrip(">"),
               GIT_COMMITTER_NAME=name.strip(), GIT_COMMITTER_EMAIL=email.rstrip(">"))
    if date:
        env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
    return env


def _inputs_digest() -> str:
    """A digest of everything the assembled tree is made of."""
    h = hashlib.sha256(base.pinned()["version"].encode())
    for top in (paths.PATCHES, paths.OVERLAY):
        for p in sorted(top.rglob("*")):
            if p.is_file():
                h.update(str(p.relative_to(paths.ROOT)).encode())
                h.update(p.read_bytes())
    return h.hexdigest()


def overlay_files() -> set[str]:
    return {str(p.relative_to(paths.OVERLAY)) for p in paths.OVERLAY.rglob("*")
            if p.is_file() and p.name != ".gitkeep"}


def _expand(rel: str) -> list[str]:
    src = paths.OVERLAY / rel
    if src.is_dir():
        return sorted(str(p.relative_to(paths.OVERLAY)) for p in src.rglob("*")
                      if p.is_file())
    if not src.is_file():
        raise StepError(f"overlay file linux/{rel} named by a patch does not exist")
    return [rel]


def _create_base() -> None:
    tarball, version = base.fetch()
    with step("unpack the base"):
        if paths.TREE.exists():
            shutil.rmtree(paths.TREE)
        base.unpack(tarball, paths.TREE)
    with step("commit the base"):
        git_run("init", "-q", "-b", "main")
        git_run("config", "gc.auto", "0")
        git_run("config", "core.untrackedCache", "true")
        git_run("add", "-A", "-f")
        env = _identity_env("Debian linux-source <debian-kernel@lists.debian.org>",
                            "2000-01-01T00:00:00Z")
        msg = f"base: Debian linux-source-6.12 {version}\n"
        run(["git", "-C", paths.TREE, "commit", "-q", "-m", msg], env=env, quiet=True)
        git_run("tag", "base")


def assembled_is_current() -> bool:
    stamp = paths.TREE / ".git" / STAMP
    if not stamp.exists() or stamp.read_text() != _inputs_digest():
        return False
    head = git("rev-parse", "HEAD").strip()
    mark = git("rev-parse", "-q", "--verify", ASSEMBLED, check=False).strip()
    return head == mark and not git("status", "--porcelain", "-uno").strip()


def check_unexported() -> None:
    """Refuse to throw away work done in the tree that patches/ does not have."""
    if git("status", "--porcelain", "--ignored").strip():
        raise StepError("build/tree has uncommitted changes: run `make patches` "
                        "(or `make refresh`/`make new-patch`) first, or FORCE=1")
    head = git("rev-parse", "HEAD").strip()
    mark = git("rev-parse", "-q", "--verify", ASSEMBLED, check=False).strip()
    if mark and head != mark:
        raise StepError("build/tree has commits that are not in patches/: run "
                        "`make patches` first, or FORCE=1")


def _tree_base_version() -> str:
    """The base version build/tree was made from (its base commit says)."""
    subject = git("log", "-1", "--format=%s", "base", check=False).strip()
    return subject.rsplit(" ", 1)[-1]


def assemble(force: bool = False, keep_going: bool = False) -> None:
    """Build build/tree from the base, patches/series and linux/.

    With @keep_going, a patch that does not apply is skipped and the next
    ones tried: the error then names every patch that failed.
    """
    if not (paths.TREE / ".git").exists():
        _create_base()
    elif assembled_is_current():
        print("tree: up to date", file=sys.stderr)
        return
    else:
        if not force:
            check_unexported()
        if _tree_base_version() != base.pinned()["version"]:
            _create_base()
    failed: list[str] = []
    with step("apply patches/series"):
        git_run("checkout", "-q", "-f", "--detach", "base")
        git_run("clean", "-q", "-fdx")
        git_run("checkout", "-q", "-B", "main")
        claimed: set[str] = set()
        for pf in read_series(paths.PATCHES):
            try:
                claimed |= _apply(pf)
            except StepError as exc:
                if not keep_going:
                    raise
                git_run("reset", "-q", "--hard")
                failed.append(str(exc))
        if failed:
            raise StepError(f"{len(failed)} patches do not apply to "
                            f"{base.pinned()['version']}:\n  " +
                            "\n  ".join(failed))
        stray = overlay_files() - claimed
        if stray:
            raise StepError("files in linux/ that no patch names (add an "
                            f"'Overlay:' line): {', '.join(sorted(stray))}")
        git_run("update-ref", ASSEMBLED, "HEAD")
        (paths.TREE / ".git" / STAMP).write_text(_inputs_digest())
    print(git("log", "--oneline", "base~0..HEAD") or "tree: no patches yet",
          file=sys.stderr)


def rebase(version: str) -> None:
    """Move BASE to @version, then apply the series to it, reporting every
    patch that no longer applies."""
    pkg = base.pinned()["package"]
    served = base.served_versions(pkg)
    if version not in served:
        raise StepError(f"{pkg} {version} is not served here; served: "
                        f"{', '.join(served) or 'none'}")
    if (paths.TREE / ".git").exists():
        check_unexported()
    base.set_pinned(version)
    assemble(keep_going=True)


def _apply(path: Path) -> set[str]:
    pf = parse(path.read_text())
    if pf.diff.strip():
        tmp = paths.BUILD / "apply.patch"
        tmp.write_text(pf.diff)
        try:
            git_run("apply", "--index", tmp)
        except StepError as exc:
            raise StepError(f"{path.name} does not apply: {exc}") from None
    files: list[str] = []
    for rel in pf.overlay:
        files += _expand(rel)
    for rel in files:
        dst = paths.TREE / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(paths.OVERLAY / rel, dst)
        git_run("add", "-f", rel)
    msg = paths.BUILD / "commit.msg"
    msg.write_text(pf.message)
    run(["git", "-C", paths.TREE, "commit", "-q", "--allow-empty", "-F", msg],
        env=_identity_env(pf.author, pf.date), quiet=True)
    return set(files)


def export() -> None:
    """Write the commits after `base` back to patches/ and linux/."""
    if git("status", "--porcelain", "--ignored").strip():
        raise StepError("build/tree has uncommitted changes: commit them (or use "
                        "`make refresh P=...` / `make new-patch`) first")
    claimed_before = set()
    for pf in read_series(paths.PATCHES):
        claimed_before |= set(parse(pf.read_text()).overlay)
    base_files = set(git("ls-tree", "-r", "--name-only", "base").splitlines())
    commits = git("rev-list", "--reverse", "base..HEAD").split()
    names, owner = [], {}
    old = set(paths.PATCHES.glob("*.patch"))
    for n, sha in enumerate(commits, 1):
        author, date, subject = git("log", "-1", "--format=%an <%ae>%n%aD%n%s",
                                    sha).splitlines()
        body = git("log", "-1", "--format=%b", sha)
        upstream, overlay = [], []
        for line in git("diff-tree", "--no-commit-id", "-r", "--name-status",
                        "--no-renames", sha).splitlines():
            status, rel = line.split("\t", 1)
            # A file the base has is a diff, unless linux/ holds our own
            # replacement of it (an Overlay: line said so).
            if rel in base_files and rel not in claimed_before:
                upstream.append(rel)
            elif status == "D":
                (paths.OVERLAY / rel).unlink(missing_ok=True)
                owner.pop(rel, None)
            else:
                if rel in owner:
                    print(f"warning: {subject}: changes linux/{rel}, which "
                          f"'{owner[rel]}' brings in; fold the change into that "
                          "commit", file=sys.stderr)
                    continue
                owner[rel] = subject
                overlay.append(rel)
        stat = diff = ""
        if upstream:
            stat = git("diff", "--stat=72", f"{sha}^", sha, "--", *upstream)
            diff = git("diff", f"{sha}^", sha, "--", *upstream)
        pf = PatchFile(author=author, date=date, subject=subject, body=body,
                       overlay=sorted(overlay), stat=stat, diff=diff)
        name = f"{n:04d}-{slug(subject)}.patch"
        (paths.PATCHES / name).write_text(pf.render())
        old.discard(paths.PATCHES / name)
        names.append(name)
    # linux/ keeps the newest version of every file a commit brought in.
    final = set(owner)
    for rel in final:
        dst = paths.OVERLAY / rel
        dst.parent.mkdir(parents=True, exist_ok=True)
        dst.write_bytes(git_bytes(f"HEAD:{rel}"))
    # Remove only what a patch used to bring in and no commit has any more;
    # a file that never was in a patch is somebody's unfinished work.
    for rel in overlay_files() - final:
        if rel in claimed_before:
            (paths.OVERLAY / rel).unlink()
        else:
            print(f"warning: linux/{rel} is in no patch; kept", file=sys.stderr)
    for stale in old:
        stale.unlink()
    (paths.PATCHES / "series").write_text("".join(n + "\n" for n in names))
    git_run("update-ref", ASSEMBLED, "HEAD")
    (paths.TREE / ".git" / STAMP).write_text(_inputs_digest())
    print(f"patches: {len(names)} patches written to patches/", file=sys.stderr)


def git_bytes(obj: str) -> bytes:
    return subprocess.run(["git", "-C", str(paths.TREE), "show", obj],
                          check=True, stdout=subprocess.PIPE).stdout


def commit_for(which: str) -> str:
    """The tree commit of a patch named by series number or file name."""
    names = [p.name for p in read_series(paths.PATCHES)]
    commits = git("rev-list", "--reverse", "base..HEAD").split()
    idx = None
    if which.isdigit():
        idx = int(which) - 1
    else:
        for i, name in enumerate(names):
            if name == which or name.startswith(which):
                idx = i
    if idx is None or not 0 <= idx < len(commits):
        raise StepError(f"no patch {which!r} in patches/series")
    return commits[idx]


def refresh(which: str) -> None:
    """Fold the tree's uncommitted edits into patch @which and export."""
    sha = commit_for(which)
    # Debian's top-level .gitignore ignores everything: add with -f.
    git_run("add", "-A", "-f")
    git_run("commit", "-q", f"--fixup={sha}")
    env = dict(os.environ, GIT_SEQUENCE_EDITOR=":", GIT_EDITOR=":")
    run(["git", "-C", paths.TREE, "rebase", "-q", "-i", "--autosquash", "base"],
        env=env, quiet=True)
    export()


def new_patch(subject: str, body: str) -> None:
    """Commit the tree's uncommitted edits as a new patch at the end and export."""
    if not git("status", "--porcelain", "--ignored").strip():
        raise StepError("build/tree has no changes to make a patch of")
    name = git("config", "user.name", check=False).strip() or os.environ.get(
        "GIT_AUTHOR_NAME", "vIOMMU series")
    email = git("config", "user.email", check=False).strip() or os.environ.get(
        "GIT_AUTHOR_EMAIL", "viommu@example.org")
    msg = f"{subject}\n\n{body.strip()}\n\nSigned-off-by: {name} <{email}>\n"
    (paths.BUILD / "commit.msg").write_text(msg)
    git_run("add", "-A", "-f")
    run(["git", "-C", paths.TREE, "commit", "-q", "-F", paths.BUILD / "commit.msg"],
        env=_identity_env(f"{name} <{email}>", ""), quiet=True)
    export()


def format_series() -> list[Path]:
    """git format-patch the whole work into out/series with a cover letter."""
    if paths.SERIES_OUT.exists():
        shutil.rmtree(paths.SERIES_OUT)
    paths.SERIES_OUT.mkdir(parents=True)
    run(["git", "-C", paths.TREE, "format-patch", "-q", "--cover-letter",
         "--no-signature", "-o", paths.SERIES_OUT, "base..HEAD"], quiet=True)
    cover = paths.SERIES_OUT / "0000-cover-letter.patch"
    if cover.exists():
        subject, _, blurb = (paths.PATCHES / "cover-letter").read_text().partition("\n")
        text = cover.read_text()
        text = text.replace("*** SUBJECT HERE ***", subject.strip())
        text = text.replace("*** BLURB HERE ***", blurb.strip())
        cover.write_text(text)
    out = sorted(paths.SERIES_OUT.glob("*.patch"))
    print(f"series: {len(out)} files in {paths.SERIES_OUT}", file=sys.stderr)
    return out


def check_series_applies(work: Path) -> str:
    """Take out/series as `git am` would, onto the base; return the tree id.

    Each patch goes through `git mailinfo` (the mail must give an author
    and a subject) and `git apply --cached` into an index of its own in
    @work, which starts as the base's: the same parsing and applying as
    `git am`, without checking out and deleting a kernel tree (about 45 s
    of a 2-core machine's `make check`).
    """
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    env = dict(os.environ, GIT_INDEX_FILE=str(work / "index"))
    git_run("read-tree", "base", env=env)
    for p in sorted(paths.SERIES_OUT.glob("*.patch")):
        if p.name.startswith("0000-"):
            continue
        with open(p, "rb") as mail:
            info = subprocess.run(["git", "-C", paths.TREE, "mailinfo",
                                   work / "msg", work / "diff"], stdin=mail,
                                  stdout=subprocess.PIPE, text=True, check=True).stdout
        fields = dict(line.split(": ", 1) for line in info.splitlines() if ": " in line)
        if not fields.get("Author") or not fields.get("Subject"):
            raise StepError(f"{p.name}: git mailinfo finds no author or subject")
        git_run("apply", "--cached", work / "diff", env=env)
    tree_id = git("write-tree", env=env).strip()
    shutil.rmtree(work, ignore_errors=True)
    return tree_id
