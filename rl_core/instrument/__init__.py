"""Environment instrumentation: insert progress markers into a program, and read them back from its output.

The paper's partial credit (DESIGN.md §1, §4): after the policy wrote a program, the environment inserts a
marker call after each milestone, ``__practicum_mark__("data_loaded")``; running, the first call for a stage
writes ``@@practicum:<nonce>:<stage>`` on its own line to file descriptor 1 (stdout), and `parse_stages`
reads the stages back from the output by that per-attempt nonce. A program that prints stage-like lines
itself does not know the nonce and earns nothing for them.

`instrument` works on the AST. It finds, at any depth (functions, methods, ``if __name__ ...``, loops,
with-blocks, try-blocks):

- ``imports_done``: after the last top-level import (or ``try:`` of imports); without top-level
  imports, after each import statement;
- ``data_loaded``: pandas/polars ``read_*``, numpy ``load/loadtxt/genfromtxt/fromfile/memmap``,
  ``open(...)``, ``Path.read_text/read_bytes``, ``Image.open``, ``imread`` or ``ImageFolder`` of a path that
  mentions ``input`` (a string constant, or a name assigned one);
- ``model_defined``: constructors of estimators (scikit-learn names such as ``*Classifier``,
  ``*Regressor``, ``*Regression``, ``SVC``, ``Ridge``, ``Pipeline``, ``make_pipeline``, ``GridSearchCV``;
  ``LGBM*``, ``XGB*``, ``CatBoost*``), ``torch.nn`` layers and containers, classes of the program that
  subclass ``nn.Module``/``BaseEstimator`` or define ``fit`` and ``predict``, ``AutoModel*.from_pretrained``;
- ``model_trained``: ``.fit(...)`` / ``.partial_fit`` on anything not known to be a preprocessing object
  (``*Scaler``, ``*Encoder``, ``*Vectorizer``, ...), ``lgb.train``/``xgb.train`` (which also define the
  model), ``cross_val_score``-like calls, ``trainer.train()``, and torch training loops (a loop calling
  ``.backward()`` or ``opt*.step()``: the marker goes after the outermost such loop of the function);
- ``predictions_made``: ``.predict``, ``.predict_proba``, ``.predict_log_proba``, ``.decision_function``,
  and calling a model inside ``with torch.no_grad()`` / ``torch.inference_mode()`` (or a function
  decorated with them);
- ``submission_written``: ``.to_csv``, ``.write_csv`` or ``np.savetxt`` with a path that mentions
  ``submission`` (or a receiver named ``sub*``), and ``open(..., "w")`` of such a path.

A call to a function of the program (by its name) or to a method of one of its classes (``x.name(...)``)
that contains events counts as those events too, so the marker also follows ``train = load_data()`` when
``load_data`` ends in ``return pd.read_csv(...)`` (a marker after a ``return`` would never run).

Semantics are never changed: a marker is a statement inserted after the statement containing the event
(joined with ``;`` on the same line for a simple statement, so line numbers in tracebacks still match the
original; on a new line after a compound one such as a with-block or a loop). The marker function is
defined by one ``exec(...)`` statement joined to the first line, catches its own errors and prints each
stage once. The output is checked: with the marker calls removed, its AST must equal the original's;
otherwise the markers are inserted into the AST and the program re-rendered with `ast.unparse` (comments
and line numbers lost), checked the same way. A program that does not parse is returned unchanged, with no
markers: it then fails by itself. `lm_instrument` lets a frozen LM insert the markers, with the same check.

Markers are removed from the stdout shown to users (`strip_markers`); forged lines stay, as program output.
A program that itself names the marker function (``__practicum_mark__``, as a name, an attribute or in a
string) gets no markers at all: calling the environment's marker is the one forgery that the nonce alone
would not stop, so such a program earns no partial credit (and, calling an undefined name, fails). The
same holds for a program that reaches for what would let it find the marker or the nonce at run time
(`INTROSPECTION_NAMES`: ``globals()``, ``vars()``, frames, code objects, ``gc.get_objects``, ``inspect``,
``__file__``/``argv``/``"program.py"`` to read its own source, ``exec``/``eval``/``compile``/``__import__``
to build code the check cannot see): such programs are rare in ML solutions and earn no partial credit;
their submission is still graded. The marker code runs inside the program's own process, so no check of
this kind is complete (a determined program can search its own memory by other means); what keeps forging
from paying is, as in the paper, that a marker is worth far less than a valid submission.
Not covered: events the rules do not recognise (a model built by a helper from another module, a path held
in a function argument); a marker for an event in an ``elif`` test runs after the whole if-chain.

Where things are: this module holds the two instrumenters; `markers` the stages and the marker lines;
`rules` what counts as each stage's event and where its marker goes; `render` writing the markers in and
checking the result; `guard` the forgery check.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass
from typing import Literal

from rl_core.instrument.guard import INTROSPECTION_NAMES, names_the_marker
from rl_core.instrument.markers import (
    MARK_FUNCTION,
    MARKER_PREFIX,
    STAGES,
    marker_line,
    parse_stages,
    strip_markers,
)
from rl_core.instrument.render import (
    CannotRender,
    checked,
    parse_program,
    prelude_edit,
    prelude_statement,
    render_ast,
    render_text,
    splice,
)
from rl_core.instrument.rules import find_anchors

__all__ = [
    "INTROSPECTION_NAMES",
    "MARKER_PREFIX",
    "MARK_FUNCTION",
    "STAGES",
    "Instrumented",
    "Method",
    "instrument",
    "lm_instrument",
    "marker_line",
    "parse_stages",
    "strip_markers",
]

Method = Literal["ast", "lm", "none"]


@dataclass(frozen=True)
class Instrumented:
    """An instrumented program: its source, the stages it has markers for (canonical order), and how."""

    program: str
    inserted: tuple[str, ...]
    method: Method = "ast"


def instrument(program: str, nonce: str) -> Instrumented:
    """Insert the stage markers, printing with `nonce` (letters, digits, underscores), by AST rules.

    Returns the program unchanged with no markers when it does not parse, has no recognisable event, or
    names the marker function itself (a forgery: see the module docstring).

    >>> out = instrument("import pandas as pd\\ndf = pd.read_csv('input/train.csv')\\n", "ab12")
    >>> out.inserted
    ('imports_done', 'data_loaded')
    >>> out.program.splitlines()[1]
    "df = pd.read_csv('input/train.csv'); __practicum_mark__('data_loaded')"
    """
    tree = parse_program(program)
    if tree is None or names_the_marker(tree):
        return Instrumented(program, (), "ast")
    original_dump, anchors = ast.dump(tree), find_anchors(tree)
    if not anchors:
        return Instrumented(program, (), "ast")
    try:
        candidate: str | None = render_text(program, tree, anchors, nonce)
    except (CannotRender, IndexError, UnicodeDecodeError):  # positions that do not fit the text
        candidate = None
    stages = checked(candidate, original_dump, prelude=True) if candidate is not None else None
    if stages is None:
        candidate = render_ast(tree, anchors, nonce)
        stages = checked(candidate, original_dump, prelude=True)
    if stages is None:
        return Instrumented(program, (), "ast")
    return Instrumented(candidate, stages, "ast")  # type: ignore[arg-type]


LM_PROMPT = """You add progress markers to a Python program without changing it in any other way.
After the statement where each milestone happens, insert a new statement `__practicum_mark__("STAGE")`, with
STAGE one of: imports_done (the imports are done), data_loaded (the input data is read), model_defined (the
model is constructed), model_trained (the model is fitted or its training loop ends), predictions_made
(predictions are computed), submission_written (the submission file is written).
Do not define __practicum_mark__. Do not edit, add, remove or reorder any other code, comments aside.
Reply with the whole program in one ```python code block and nothing else.

```python
{program}
```
"""


def lm_instrument(program: str, nonce: str, generate: Callable[[str], str]) -> Instrumented:
    """Let a frozen LM insert the markers; keep its version only if, without the marker calls, its AST
    equals the original's and it marks at least one stage. Otherwise (or if `generate` raises) the AST
    instrumenter's result is returned (``method="ast"``).

    Args:
        generate: prompt -> completion, e.g. greedy decoding with the base model's adapters off.
    """
    tree = parse_program(program)
    if tree is None or names_the_marker(tree):
        return Instrumented(program, (), "ast")
    try:
        candidate = _reply_code(generate(LM_PROMPT.format(program=program)))
    except Exception:
        return instrument(program, nonce)
    original_dump = ast.dump(tree)
    stages = checked(candidate, original_dump, prelude=False)
    if not stages:
        return instrument(program, nonce)
    lines = candidate.split("\n")
    edit = prelude_edit(ast.parse(candidate), lines, prelude_statement(nonce))
    try:
        with_prelude = splice(lines, [edit], []) if len(edit) == 3 else splice(lines, [], [edit])  # type: ignore[list-item]
    except (IndexError, UnicodeDecodeError):
        return instrument(program, nonce)
    if checked(with_prelude, original_dump, prelude=True) != stages:
        return instrument(program, nonce)
    return Instrumented(with_prelude, stages, "lm")


def _reply_code(reply: str) -> str:
    """The code of an LM reply: its one fenced block, or the whole reply when it has none."""
    from rl_core.responses import parse_response

    parsed = parse_response(reply)
    return parsed.code if parsed.code is not None else reply
