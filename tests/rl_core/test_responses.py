"""rl_core.responses: the plan and the one Python block of an LM response; malformed responses never raise."""

from __future__ import annotations

import pytest

from rl_core.responses import ParsedResponse, parse_response


def test_it_splits_the_plan_from_the_python_block():
    parsed = parse_response("I will fit a forest.\n\n```python\nimport pandas as pd\nprint(1)\n```\n")
    assert parsed == ParsedResponse("I will fit a forest.", "import pandas as pd\nprint(1)\n", None)


def test_it_accepts_an_untagged_fence():
    assert parse_response("Plan.\n```\nprint(1)\n```").code == "print(1)\n"


@pytest.mark.parametrize("tag", ["py", "Python", "python3", "python "])
def test_it_accepts_other_spellings_of_python(tag):
    assert parse_response(f"```{tag}\nprint(1)\n```").code == "print(1)\n"


def test_it_accepts_a_tilde_fence_and_a_longer_backtick_fence():
    assert parse_response("~~~python\nx = 1\n~~~").code == "x = 1\n"
    assert parse_response("````python\ns = '```'\n````").code == "s = '```'\n"


def test_it_keeps_blocks_in_other_languages_in_the_plan():
    parsed = parse_response("Install:\n```bash\npip install x\n```\n```python\nprint(1)\n```")
    assert parsed.code == "print(1)\n"
    assert "pip install x" in parsed.plan


def test_it_keeps_prose_after_the_block_in_the_plan():
    assert parse_response("Before.\n```python\nx = 1\n```\nAfter.").plan == "Before.\n\nAfter."


def test_a_response_without_a_code_block_is_an_error():
    parsed = parse_response("I would train a gradient-boosting model.")
    assert parsed.code is None
    assert parsed.error == "The response has no fenced Python code block."
    assert parsed.plan == "I would train a gradient-boosting model."


def test_a_response_with_two_python_blocks_is_an_error_that_names_them():
    parsed = parse_response("```python\na = 1\n```\nand\n```python\nb = 2\n```")
    assert parsed.code is None
    assert parsed.error == (
        "The response has 2 fenced Python code blocks (opened on lines 1, 5); exactly one is expected."
    )


def test_an_unclosed_fence_is_an_error_that_names_its_line():
    parsed = parse_response("Plan.\n```python\nimport os\n")
    assert (parsed.code, parsed.error) == (None, "The code fence opened on line 2 is never closed.")


def test_an_empty_block_is_an_error():
    assert parse_response("```python\n\n```").error == "The response's Python code block is empty."


@pytest.mark.parametrize("text", ["", "```", "\x00\x01```python", None, 42, "```python\n" * 1000])
def test_it_never_raises(text):
    parsed = parse_response(text)  # type: ignore[arg-type]
    assert parsed.code is None and parsed.error
