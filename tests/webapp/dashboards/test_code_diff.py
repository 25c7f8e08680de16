"""The compare page's side-by-side code diff (webapp.dashboards.code_diff): numbered lines on both sides,
removed, added and changed lines classed for their colours, unchanged stretches folded, text escaped, and
none of difflib.HtmlDiff's "next"/"top" navigation columns."""

from __future__ import annotations

import re

from webapp.dashboards.code_diff import diff_rows, diff_table_html

OLD = "import pandas as pd\nmodel = 'knn'\nk = 5\nprint('fit')\n"
NEW = "import pandas as pd\nmodel = 'forest'\nprint('fit')\nprint('done')\n"


def kinds(old: str, new: str, **options) -> list[tuple]:
    rows = diff_rows(old.splitlines(), new.splitlines(), **options)
    return [(r.kind, r.old_number, r.new_number) for r in rows]


def test_rows_pair_changed_lines_and_show_removed_and_added_ones_on_one_side():
    assert kinds(OLD, NEW) == [
        ("equal", 1, 1),
        ("replace", 2, 2),
        ("delete", 3, None),
        ("equal", 4, 3),
        ("insert", None, 4),
    ]


def test_unchanged_lines_beyond_the_context_fold_into_one_row_that_counts_them():
    old = "\n".join(f"line {i}" for i in range(1, 21))
    new = old.replace("line 10", "line ten")
    rows = diff_rows(old.splitlines(), new.splitlines(), context=2)
    assert [(r.kind, r.folded) for r in rows if r.kind == "fold"] == [("fold", 7), ("fold", 8)]
    assert [r.old_number for r in rows if r.kind != "fold"] == [8, 9, 10, 11, 12]


def test_the_same_program_gives_no_rows_and_a_table_that_says_so():
    assert diff_rows(["a", "b"], ["a", "b"]) == []
    assert "The two programs are the same." in diff_table_html("a\n", "a\n", old_title="x", new_title="y")


def test_the_table_has_no_navigation_columns_only_numbers_and_code_on_each_side():
    table = diff_table_html(OLD, NEW, old_title="run #1, attempt 3", new_title="run #2, attempt 5")
    assert "diff_next" not in table and "href" not in table, "difflib.HtmlDiff's n/t links are gone"
    cells = re.findall(
        r'<td class="([a-z ]+)"', re.search(r'<tr class="diff_chg">(.*?)</tr>', table).group(1)
    )
    assert cells == ["num old", "code old", "num new", "code new"]
    assert '<th colspan="2">run #1, attempt 3</th><th colspan="2">run #2, attempt 5</th>' in table


def test_removed_added_and_changed_rows_carry_the_classes_the_page_colours():
    table = diff_table_html(OLD, NEW, old_title="a", new_title="b")
    assert re.search(r'<tr class="diff_sub"><td class="num old">3</td><td class="code old">k = 5</td>', table)
    assert re.search(r'<tr class="diff_add"><td class="num new empty"></td>', table) is None
    assert re.search(r'<tr class="diff_add"><td class="num old empty"></td>.*?print\(&#x27;done', table)
    assert '<span class="diff_em">knn</span>' in table and '<span class="diff_em">forest</span>' in table


def test_the_programs_text_is_escaped():
    table = diff_table_html("x = 1\n", "x = '<script>'\n", old_title="<b>old</b>", new_title="new")
    assert "<script>" not in table and "<b>" not in table
    assert "&lt;script&gt;" in table and "&lt;b&gt;old&lt;/b&gt;" in table
