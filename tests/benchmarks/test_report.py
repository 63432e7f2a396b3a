"""benchmarks/_report.py: generated blocks replace only what lies between their markers."""

import pytest

from benchmarks import _report

PAGE = """# Results

Hand-written intro.

## T
<!-- generated: t -->
stale
<!-- end generated -->

Hand-written after the block.
"""


def test_write_blocks_replaces_only_between_the_markers(tmp_path):
    other, page = tmp_path / "other.md", tmp_path / "results.md"
    other.write_text("# Other\n")
    page.write_text(PAGE)
    _report.write_blocks([other, page], {"t": "fresh 1\nfresh 2"})
    text = page.read_text()
    assert "stale" not in text and "fresh 1\nfresh 2\n<!-- end generated -->" in text
    assert text.replace("fresh 1\nfresh 2", "stale") == PAGE
    assert other.read_text() == "# Other\n"


def test_a_block_no_page_has_is_an_error_and_writes_nothing(tmp_path):
    page = tmp_path / "results.md"
    page.write_text("# Results\n\n## T\nhand-written\n")
    with pytest.raises(SystemExit, match="generated: t"):
        _report.write_blocks([page], {"t": "fresh"})
    assert page.read_text() == "# Results\n\n## T\nhand-written\n"


def test_writing_twice_changes_nothing_the_second_time(tmp_path):
    page = tmp_path / "results.md"
    page.write_text(PAGE)
    _report.write_generated(page, "t", "body")
    once = page.read_text()
    _report.write_generated(page, "t", "body")
    assert page.read_text() == once


def test_an_unclosed_block_is_an_error():
    with pytest.raises(ValueError):
        _report.replace_generated("<!-- generated: t -->\nx\n", "t", "y")
