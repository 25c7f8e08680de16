"""Helper modules beside the tests (imported by them, not tests themselves): kept out of collection, which
`--doctest-modules` would otherwise import without the test's own path set-up."""

collect_ignore = ["paper12_files.py", "paper12_graders.py", "paper12_text.py", "table_penguins.py"]
