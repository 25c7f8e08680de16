"""Environment instrumentation: insert progress markers into a program, and read them back from its output.

The paper's partial credit (DESIGN.md §1, §4): after the policy wrote a program, the environment inserts a
marker call after each milestone, ``__practicum_mark__("data_loaded")``; running, the first call for a stage
writes ``@@practicum:<nonce>:<stage>`` to the attempt's private marker channel (a socket the sandbox opens
for this attempt, never stdout), and `credited_stages` reads the stages back by that per-attempt nonce.

Why a program cannot earn more stage credit than its honest version, layer by layer:

1. Markers never travel on stdout or stderr, so nothing a program (or a child it spawns) writes to its own
   output, by ``print``, ``os.write(1, ...)``, ``sys.__stdout__``, ``/dev/stdout`` or any other way, counts.
2. The nonce is not in the program's text, environment or arguments: the marker function reads it from
   the channel before the program's first statement runs, so reading its own source learns nothing; and
   the channel's descriptor is closed to child processes.
3. The guard (`guard`): a program that names the marker function, or reaches for what would let it find
   the marker function or the nonce in its own memory (``globals()``, ``vars()``, ``dir()``, ``getattr``
   with a computed or dunder name, ``sys.modules``, frames, ``inspect``, ``gc.get_objects``, ``ctypes``,
   ...; `INTROSPECTION_NAMES` and friends) gets no markers at all; it still runs and is graded.
4. A stage is credited only if the instrumenter inserted a marker for it into this program
   (`credited_stages`): whatever route a program finds to the marker, it earns nothing for a stage it has
   no code for.

Not covered: the marker code runs inside the program's own process, so a program that defeats the guard
(by a route it does not foresee) AND has code for a stage that it never runs (``if False: model.fit(X)``)
can still claim that stage; what keeps such forging from paying is the bound above and that a stage is
worth far less than a valid submission.

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
markers: it then fails by itself, as does a program that declares a source encoding other than UTF-8
(`render.declares_utf8`: the text checked must be the text run). `lm_instrument` lets a frozen LM insert the
markers, with the same check, the forgery guard, and one more: each LM marker must follow a statement holding
an event of its stage, as the rules recognise events (the LM places markers, it does not decide what
counts); otherwise the rules' markers run (``method="lm-fallback"``). In training its halves run apart:
`lm_markup` where the LM is (the run's supervisor), `accept_lm_markup` where the program runs.

Also not covered: events the rules do not recognise (a model built by a helper from another module, a
path held in a function argument); a marker for an event in an ``elif`` test runs after the whole if-chain.

Where things are: this module holds the two instrumenters; `markers` the stages and the marker lines;
`rules` what counts as each stage's event and where its marker goes; `render` writing the markers in and
checking the result; `guard` the forgery check.
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
    prelude_edit,
    prelude_statement,
    render_ast,
    render_text,
    splice,
)
from rl_core.instrument.rules import find_anchors, markers_follow_their_events

__all__ = [
    "CHANNEL_ENV",
    "INTROSPECTION_NAMES",
    "MARKER_PREFIX",
    "MARK_FUNCTION",
    "STAGES",
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
    "df = pd.read_csv('input/train.csv'); __practicum_mark__('data_loaded')"
    """
    tree = parse_program(program)
    if tree is None or names_the_marker(tree):
        return Instrumented(program, (), "ast")
    original_dump, anchors = ast.dump(tree), find_anchors(tree)
    if not anchors:
        return Instrumented(program, (), "ast")
    try:
        candidate: str | None = render_text(program, tree, anchors)
    except (CannotRender, IndexError, UnicodeDecodeError):  # positions that do not fit the text
        candidate = None
    stages = checked(candidate, original_dump, prelude=True) if candidate is not None else None
    if stages is None:
        candidate = render_ast(tree, anchors)
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
    """The checking half: `markup` (`lm_markup`'s output for `program`, possibly made on another machine)
    with the marker prelude for `nonce` written in, ``method="lm"``, when `program` passes the forgery guard,
    `markup` without its marker calls has exactly `program`'s AST, marks at least one stage, and every marker
    follows a statement holding an event of each stage it names, as the AST rules recognise events
    (`rules.markers_follow_their_events`: six markers right after the imports claim stages no code reached).
    Otherwise the AST rules' `instrument(program, nonce)`, ``method="lm-fallback"``.

    >>> changed = "import os\\nprint(1)\\n__practicum_mark__('imports_done')\\n"
    >>> accept_lm_markup("import os\\n", changed, "ab").method
    'lm-fallback'
    """
    tree = parse_program(program)
    if tree is not None and not names_the_marker(tree):
        accepted = _with_prelude(markup, ast.dump(tree), nonce)
        if accepted is not None:
            return accepted
    return replace(instrument(program, nonce), method="lm-fallback")


def _with_prelude(markup: str, original_dump: str, nonce: str | None) -> Instrumented | None:
    """`markup` with the prelude for `nonce`, if it is the original program plus markers; else None."""
    try:
        stages = checked(markup, original_dump, prelude=False)
        if not stages or not markers_follow_their_events(ast.parse(markup), marker_stages):
            return None
    except (RecursionError, MemoryError):
        return None
    lines = markup.split("\n")
    edit = prelude_edit(ast.parse(markup), lines, prelude_statement())
    try:
        with_prelude = splice(lines, [edit], []) if len(edit) == 3 else splice(lines, [], [edit])
    except (IndexError, UnicodeDecodeError):
        return None
    if checked(with_prelude, original_dump, prelude=True) != stages:
        return None
    return Instrumented(with_prelude, stages, "lm")


def _reply_code(reply: str) -> str:
    """The code of an LM reply: its one fenced block, or the whole reply when it has none."""
    from rl_core.responses import parse_response

    parsed = parse_response(reply)
    return parsed.code if parsed.code is not None else reply
