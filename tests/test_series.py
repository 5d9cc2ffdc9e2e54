# SPDX-License-Identifier: GPL-2.0
"""The series: well-formed patches that apply to the base and rebuild the tree."""

from testbed import paths, tree
from testbed.patchfile import message_problems, parse, read_series


def test_every_patch_is_signed_off_and_explained():
    for p in read_series(paths.PATCHES):
        pf = parse(p.read_text())
        assert not message_problems(pf), f"{p.name}: {message_problems(pf)}"
        assert len(pf.subject) <= 75, f"{p.name}: subject longer than 75 characters"


def test_series_applies_to_a_fresh_base():
    tree.assemble()
    tree.format_series()
    applied = tree.check_series_applies(paths.BUILD / "series-check")
    head = tree.git("rev-parse", "HEAD^{tree}").strip()
    assert applied == head, "git am of out/series does not reproduce build/tree"
