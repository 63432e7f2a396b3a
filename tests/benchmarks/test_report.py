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


def test_write_section_replaces_only_between_the_markers(tmp_path):
    page = tmp_path / "results.md"
    page.write_text(PAGE)
    _report.write_section("## T", ["fresh 1", "fresh 2"], page=page)
    text = page.read_text()
    assert "stale" not in text and "fresh 1\nfresh 2\n<!-- end generated -->" in text
    assert text.replace("fresh 1\nfresh 2", "stale") == PAGE


def test_write_section_without_a_block_writes_nothing(tmp_path, capsys):
    page = tmp_path / "results.md"
    page.write_text("# Results\n\n## T\nhand-written\n")
    _report.write_section("## T", ["fresh"], page=page)
    assert page.read_text() == "# Results\n\n## T\nhand-written\n"
    assert "fresh" in capsys.readouterr().out


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


def test_slot_names_come_from_headings():
    assert _report.slot_name("## AutoML comparison (quick)") == "automl-comparison-quick"
