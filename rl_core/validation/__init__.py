"""Derive a validation competition from a competition's public files (issue 28's reward source
``validation``), so that the agent never sees a score computed from the hidden answers.

The public folder's labelled training table is split, seeded, into the rows the agent trains on and the
validation rows, whose features become the derived test table and whose labels become the derived answers.
The metric, the id column, the graded columns, the limits and the leaderboard stay the same:

```
dest/public/train.csv              the training rows kept, every column as in the real training table
dest/public/test.csv               the validation rows, with the real test.csv's columns that train.csv has
dest/public/sample_submission.csv  the validation ids, each with the real sample submission's prediction
dest/answers.csv                   the validation ids and the graded columns (outside public/)
```

How rows are split (`ValidationSettings`):

- by default, a seeded shuffle, stratified by class for a classification target (a label metric, or a
  probability metric whose answers are classes) when every class has two rows and both sides can hold one of
  each; otherwise a plain seeded shuffle;
- `group_column`: rows sharing a value stay on one side (scikit-learn's GroupShuffleSplit: `fraction` is the
  share of groups, not of rows); not stratified;
- `time_column`: rows sorted by that column (numbers, else dates), the latest `fraction` of them validate;
  no shuffle. Rows sharing the boundary time may fall on both sides, in file order.

Rows without a label (an empty graded or label cell) never validate: they stay in train, even when their
group validates or their time is late (they carry features only, as a real test set does). Every cell is
read and written as text, so values keep their spelling; the same files and settings write the same bytes.

When a split can be made (`validation_plan`, which reads only public files): the public folder holds exactly
a labelled training table (the one CSV besides the test table that holds every graded column, or, under a
probability metric, a label column whose values name the graded columns, ``<class>`` or
``<label>_<class>``, from which one-hot answers are built), a test table (a CSV named like ``test.csv``) and
a sample submission (named like ``sample_submission.csv``, with the id and graded columns).
Not done: any other public file (images/, JSON records, a second CSV) is refused rather than split, since rows
may key it; the real test set's shift from train (a later period, unseen groups) is imitated only through
`group_column` or `time_column`; the hidden answers are never read here, so nothing checks that the
validation answers look like them.

>>> ValidationSettings(seed=0, group_column="patient", time_column="day")
Traceback (most recent call last):
...
ValueError: Set group_column or time_column, not both ('patient', 'day').
"""

from rl_core.validation.derive import derive_validation, split_rows, stratifiable
from rl_core.validation.plan import (
    Plan,
    Refusal,
    ValidationSettings,
    label_classes,
    validation_plan,
)

__all__ = [
    "Plan",
    "Refusal",
    "ValidationSettings",
    "derive_validation",
    "label_classes",
    "split_rows",
    "stratifiable",
    "validation_plan",
]
