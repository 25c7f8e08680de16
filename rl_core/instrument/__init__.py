"""Environment instrumentation: insert progress markers into a program, and read them back from its output.

The paper's partial credit (DESIGN.md §1, §4): the environment marks each milestone of the program the
policy wrote, and the attempt earns credit for the stages whose markers fired. Here a marker is a wrapper
around the event call itself: ``pd.read_csv(path)`` runs as ``__practicum_mark__("data_loaded",
pd.read_csv)(path)``, which calls ``pd.read_csv(path)`` and returns its result. The marker fires when the
call has been evaluated and returned, and only on the evidence the call leaves (`marker_function`: a
non-empty table read from a public input file, an estimator fitted by its library's own sign or an optimizer
stepped with gradients, rows predicted by a fitted model, the submission file on disk). It then writes
``@@practicum:<nonce>:<stage>`` once to the attempt's private marker channel (a socket the sandbox opens for
this attempt, never stdout), and `credited_stages` reads the stages back by that per-attempt nonce.
``imports_done`` alone is a statement after the last import (an import that completed has run).

What each stage rests on, and why a program cannot earn a stage whose work did not run:

1. Evaluation, not position. A wrapped call in an uncalled lambda, a short-circuited operand, an untaken
   arm, a comprehension over nothing, an ``elif`` after a taken branch, a loop that runs zero times or a
   helper that returned first is never evaluated, so its marker never fires. Helpers are not marked at
   their call sites: the event inside them is.
2. Evidence on the objects, checked at run time (`marker_function`). Methods are not trusted by their
   names: ``.fit`` earns model_trained only if the object it ran on is then fitted by its library's own
   sign; a class the program wrote from scratch (no library base) with a ``fit`` that does nothing, or a
   reader function of the program named ``read_csv``, earns nothing.
3. Markers never travel on stdout or stderr, so nothing a program (or a child it spawns) writes to its own
   output counts; the nonce is in neither the program's text, its environment nor its arguments (the
   marker function reads it from the channel before the program's first statement runs), and the
   channel's descriptor is closed to child processes.
4. The guard (`guard`): a program that names the marker function, or reaches for what would let it find
   the marker function or the nonce in its own memory (``globals()``, ``dir()``, frames, ``ctypes``, ...;
   `INTROSPECTION_NAMES` and friends) gets no markers at all; it still runs and is graded. The guard is a
   deny-list and may miss a route; what it misses earns little: called directly, the marker's statement
   form marks only ``imports_done`` and its call form still needs the evidence of a real call.
5. A stage is credited only if the instrumenter marked an event of it in this program (`credited_stages`).
6. The text checked is the text run: a program that declares a source encoding other than UTF-8 gets no
   markers (`render.declares_utf8`).

Gathered outside the program (`rl_core.environment.confirmed`): data_loaded is credited only if the sandbox
saw the program open a public file (`rl_core.sandbox.reads`: inotify on the attempt's own mirror of them),
submission_written only if it finds the submission file after the run.

Not covered, and the bound on it: the other stages' evidence is gathered inside the program's process, so a
program that defeats the guard and also reads the nonce out of its own memory can write marker lines to the
channel itself, for the stages it has code for. Unless it really reads the data and writes the file, that
pays at most model_defined, model_trained and predictions_made (three at `RewardConfig.credit_per_stage`:
0.3 by default, on top of a valid submission's score when `credit_valid`), less than an honest pipeline
earns, and never a score, which the grader computes from the submission file alone.

`instrument` works on the AST. It finds events at any depth (functions, methods, ``if __name__ ...``, loops,
with-blocks, try-blocks, lambdas, comprehensions):

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
  model), ``cross_val_score``-like calls, ``trainer.train()``, and each training step of a torch loop
  (``.backward()``, ``opt*.step()``);
- ``predictions_made``: ``.predict``, ``.predict_proba``, ``.predict_log_proba``, ``.decision_function``,
  and calling a model inside ``with torch.no_grad()`` / ``torch.inference_mode()`` (or a function
  decorated with them);
- ``submission_written``: ``.to_csv``, ``.write_csv`` or ``np.savetxt`` with a path that mentions
  ``submission`` (or a receiver named ``sub*``), and ``open(..., "w")`` of such a path.

Semantics are never changed: the wrapper calls what the program called, with its arguments, and returns
what it returned (an exception passes through, unmarked). The wrappers are spliced into the program's own
text, so line numbers in tracebacks still match the original; the marker function is defined by one
``exec(...)`` statement joined to the first line. The output is checked: with the markers removed, its AST
must equal the original's; otherwise the markers are inserted into the AST and the program re-rendered with
`ast.unparse` (comments and line numbers lost), checked the same way. A program that does not parse is
returned unchanged, with no markers: it then fails by itself, as does one whose encoding is not UTF-8.

`lm_instrument` lets a frozen LM insert marker statements after the milestones it sees, as the paper does.
Its markup is accepted only if, without the markers, its AST equals the original's, and every marker follows
a statement holding an event of its stage as the rules recognise events (six markers right after the
imports are refused); the events it points at are then wrapped as the rules wrap them (``method="lm"``), so
the LM chooses which events count, never where credit fires. Otherwise the rules' markers run
(``method="lm-fallback"``). In training its halves run apart: `lm_markup` where the LM is (the run's
supervisor), `accept_lm_markup` where the program runs.

Also not covered: events the rules do not recognise (a model built by a helper from another module, a
path held in a function argument), which earn nothing.

Where things are: this module holds the two instrumenters; `markers` the stages and the marker lines;
`rules` what counts as each stage's event; `render` writing the markers in and checking the result;
`marker_function` the marker the program runs and the evidence each stage needs; `guard` the forgery check.
"""

from __future__ import annotations

import ast
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Literal

from rl_core.instrument.guard import INTROSPECTION_NAMES, names_the_marker
from rl_core.instrument.markers import (
    CHANNEL_ENV,
    MARK_FUNCTION,
    MARKER_PREFIX,
    STAGE_LABELS,
    STAGES,
    credited_stages,
    marker_line,
    parse_stages,
)
from rl_core.instrument.render import (
    CannotRender,
    checked,
    marker_stages,
    parse_program,
    render_ast,
    render_text,
    strip_markers,
)
from rl_core.instrument.rules import (
    Placement,
    find_placement,
    marker_claims,
    markers_follow_their_events,
    placement_within,
)

__all__ = [
    "CHANNEL_ENV",
    "INTROSPECTION_NAMES",
    "MARKER_PREFIX",
    "MARK_FUNCTION",
    "STAGES",
    "STAGE_LABELS",
    "Instrumented",
    "Method",
    "accept_lm_markup",
    "credited_stages",
    "instrument",
    "lm_instrument",
    "lm_markup",
    "marker_line",
    "parse_stages",
]

Method = Literal["ast", "lm", "lm-fallback", "none"]
"""Who wrote the program that runs: the AST rules; the LM (its markup accepted); the AST rules after the
LM's markup was refused or missing; nobody (instrumentation off)."""


@dataclass(frozen=True)
class Instrumented:
    """An instrumented program: its source, the stages it has markers for (canonical order), and how."""

    program: str
    inserted: tuple[str, ...]
    method: Method = "ast"


def instrument(program: str, nonce: str | None = None) -> Instrumented:
    """Insert the stage markers by AST rules.

    `nonce` is not used: the nonce is never written into the program any more (the sandbox hands it to the
    marker function through the attempt's channel, `rl_core.sandbox.ExecutionRequest.marker_nonce`); the
    argument is accepted so that callers written before the channel keep working.

    Returns the program unchanged with no markers when it does not parse, has no recognisable event, or
    names the marker function itself (a forgery: see the module docstring).

    >>> out = instrument("import pandas as pd\\ndf = pd.read_csv('input/train.csv')\\n")
    >>> out.inserted
    ('imports_done', 'data_loaded')
    >>> out.program.splitlines()[1]
    "df = __practicum_mark__('data_loaded', pd.read_csv)('input/train.csv')"
    """
    tree = parse_program(program)
    if tree is None or names_the_marker(tree):
        return Instrumented(program, (), "ast")
    return _rendered(program, tree, find_placement(tree), "ast")


def _rendered(program: str, tree: ast.Module, placement: Placement, method: Method) -> Instrumented:
    """`program` with `placement`'s markers and the prelude, spliced into its text or else re-rendered from
    its AST, whichever passes `checked` first; unchanged with no markers when neither does."""
    if not placement.stages:
        return Instrumented(program, (), method)
    original_dump = ast.dump(tree)
    try:
        candidate: str | None = render_text(program, tree, placement)
    except (CannotRender, IndexError, UnicodeDecodeError):  # positions that do not fit the text
        candidate = None
    stages = checked(candidate, original_dump, prelude=True) if candidate is not None else None
    if stages is None:
        candidate = render_ast(tree, placement)
        stages = checked(candidate, original_dump, prelude=True)
    if stages is None:
        return Instrumented(program, (), method)
    return Instrumented(candidate, stages, method)  # type: ignore[arg-type]


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


def lm_instrument(program: str, nonce: str | None, generate: Callable[[str], str]) -> Instrumented:
    """Let a frozen LM insert the markers; keep its version only if, without the marker calls, its AST
    equals the original's and it marks at least one stage (``method="lm"``). Otherwise (or if `generate`
    raises) the AST instrumenter's result is returned, with ``method="lm-fallback"``.

    The two halves are separate so that the LM can live in one process (a run's supervisor) and the program
    run in another (a sandbox worker): `lm_markup` asks the LM, `accept_lm_markup` checks its answer.

    Args:
        generate: prompt -> completion, e.g. greedy decoding with the base model's adapters off.
    """
    return accept_lm_markup(program, lm_markup(program, generate), nonce)


def lm_markup(program: str, generate: Callable[[str], str]) -> str:
    """The LM's half: the code of the frozen LM's reply to `LM_PROMPT` for `program` (marker calls, no
    prelude, no nonce), or "" when the program does not parse, the forgery guard refuses it (no markup
    could be accepted), or `generate` raises. Nothing is checked here: `accept_lm_markup` does that where
    the program runs.

    >>> reply = "```python\\nimport os\\n__practicum_mark__('imports_done')\\n```"
    >>> lm_markup("import os\\n", lambda prompt: reply)
    "import os\\n__practicum_mark__('imports_done')\\n"
    """
    tree = parse_program(program)
    if tree is None or names_the_marker(tree):
        return ""
    try:
        return _reply_code(generate(LM_PROMPT.format(program=program)))
    except Exception:  # a failing LM must not fail the attempt: the rules take over
        return ""


def accept_lm_markup(program: str, markup: str, nonce: str | None = None) -> Instrumented:
    """The checking half: `markup` is `lm_markup`'s output for `program`, possibly made on another machine.
    It is accepted when `program` passes the forgery guard, `markup` without its marker statements has
    exactly `program`'s AST, marks at least one stage, and every marker follows a statement holding an event
    of each stage it names, as the AST rules recognise events (`rules.markers_follow_their_events`: six
    markers right after the imports claim stages no code reached). Then the events it points at are marked
    as the rules mark them (their calls wrapped, so a marker fires only when its call ran), ``method="lm"``.
    Otherwise the AST rules' `instrument(program, nonce)`, ``method="lm-fallback"``.

    >>> changed = "import os\\nprint(1)\\n__practicum_mark__('imports_done')\\n"
    >>> accept_lm_markup("import os\\n", changed, "ab").method
    'lm-fallback'
    """
    tree = parse_program(program)
    if tree is not None and not names_the_marker(tree):
        claims = _lm_claims(tree, markup)
        if claims is not None:
            accepted = _rendered(program, tree, placement_within(find_placement(tree), claims), "lm")
            if accepted.inserted:
                return accepted
    return replace(instrument(program, nonce), method="lm-fallback")


def _lm_claims(tree: ast.Module, markup: str) -> list[tuple[ast.stmt, set[str]]] | None:
    """The LM's markers as (the statement of `tree` each follows, its stages), when `markup` is `tree`'s
    program plus markers that each follow an event of their stages; else None."""
    marked = parse_program(markup)
    try:
        if marked is None or not checked(markup, ast.dump(tree), prelude=False):
            return None
        if not markers_follow_their_events(marked, marker_stages):
            return None
    except (RecursionError, MemoryError):
        return None
    claims = marker_claims(marked, marker_stages)
    strip_markers(marked)  # the same statements, in the same order as the original's
    order = {id(n): i for i, n in enumerate(n for n in ast.walk(marked) if isinstance(n, ast.stmt))}
    statements = [n for n in ast.walk(tree) if isinstance(n, ast.stmt)]
    return [(statements[order[id(stmt)]], stages) for stmt, stages in claims if stmt is not None]


def _reply_code(reply: str) -> str:
    """The code of an LM reply: its one fenced block, or the whole reply when it has none."""
    from rl_core.responses import parse_response

    parsed = parse_response(reply)
    return parsed.code if parsed.code is not None else reply
