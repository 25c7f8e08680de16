"""The marker function an instrumented program runs, and the evidence each stage needs before it is marked.

This module's one function is written into every instrumented program (`render.prelude_statement`: its
source, docstrings dropped, in one ``exec`` joined to the program's first line), so it is plain Python with
no imports outside the standard library and every constant a default argument. Here it is also importable,
for its tests.

Two forms:
- ``__practicum_mark__("imports_done")``, a statement after the last import (an import that completed has
  run): it can mark ``imports_done`` and nothing else, whoever calls it.
- ``__practicum_mark__("model_trained", model.fit)(X, y)``: the instrumenter wraps the callee of an event
  call. The wrapper calls it with the same arguments and returns what it returns, so the program runs as
  written; a marker fires only when the call itself has been evaluated and returned, and only if what it
  returned (and the object it was called on) is evidence of the stage:

  - data_loaded: a library's reader (not a function of the program) read a path inside the attempt's
    ``input`` folder (an argument, or the ``Path`` it was called on) and returned something non-empty
    (rows, text, an open file, an image);
  - model_defined: it returned an object of a library class (not one the program defined from scratch)
    that can be fitted, predict or run forward: an estimator, a torch module, a booster;
  - model_trained: the estimator it was called on (or returned) is fitted by its library's own sign
    (scikit-learn's ``__sklearn_is_fitted__``, else an attribute ending in ``_`` set by ``fit``;
    ``is_fitted()``; a booster with trees), or an optimizer stepped with gradients, or a tensor that
    requires gradients was back-propagated;
  - predictions_made: it returned one or more rows, from a fitted estimator, a booster or a torch module;
  - submission_written: the file it wrote exists, outside ``input``.

  "Library class" means the object's class or one of its bases is an installed library's: a type defined
  in C, or a class with a method whose code was compiled from a file outside the attempt's folder (not a
  class's ``__module__``, which a program can set to anything). So a class the program wrote, named like
  an estimator, with a ``fit`` that does nothing, earns nothing, wherever it says it comes from.
  Checking never raises into the program: evidence that cannot be read is no evidence.

Its first call, from the prelude before any of the program's code, takes the channel's descriptor from the
environment (removing it there and from child processes), reads the attempt's nonce from the channel, and
notes where ``input`` is. Each stage is written to the channel once, never to stdout; without a channel
(the program run by hand) nothing is written.
"""

from __future__ import annotations

from typing import Any


def __practicum_mark__(
    *args: Any,
    _seen: set[str] = set(),  # noqa: B006 - state kept between calls on purpose
    _link: list[Any] = [],  # noqa: B006
    _env: str = "PRACTICUM_MARKER_FD",
    _prefix: bytes = b"@@practicum:",
) -> Any:
    import os

    if not _link:
        folders = [os.path.realpath("input") + os.sep, os.path.realpath(".") + os.sep]
        try:
            fd = int(os.environ.pop(_env))
            os.set_inheritable(fd, False)
            _link[:] = [fd, os.read(fd, 64).strip(), *folders]
        except Exception:
            _link[:] = [-1, b"", *folders]
        return None

    def send(stages: list[str]) -> None:
        new = [s for s in stages if s not in _seen]
        _seen.update(new)
        if new and _link[0] >= 0:
            try:  # noqa: SIM105 - no imports beyond os in the program's copy
                os.write(_link[0], b"".join(_prefix + _link[1] + b":" + s.encode() + b"\n" for s in new))
            except Exception:
                pass

    if not (args and callable(args[-1])):
        send(["imports_done"] if "imports_done" in args else [])  # the one stage a statement can mark
        return None
    *stages, function = args
    if all(s in _seen for s in stages):  # marked already: the call runs as written, nothing checked
        return function

    def library(obj: Any) -> bool:
        for c in type(obj).__mro__[:-1]:
            if c.__module__ == "builtins":
                continue
            if not c.__flags__ & 512:  # not a heap type: defined in C, by an installed extension
                return True
            for value in vars(c).values():
                code = getattr(getattr(value, "__func__", value), "__code__", None)
                where = getattr(code, "co_filename", "<")
                if not where.startswith("<") and not os.path.realpath(where).startswith(_link[3]):
                    return True  # a method written outside the attempt's folder: an installed library's
        return False

    def outside(fn: Any) -> bool:
        return getattr(fn, "__module__", None) not in ("__main__", None)

    def rows(obj: Any) -> int:
        shape = getattr(obj, "shape", None)
        if isinstance(shape, tuple) and shape:
            return int(shape[0])
        try:
            return len(obj)
        except Exception:
            return 0

    def paths(a: tuple[Any, ...], k: dict[str, Any]) -> list[str]:
        found = []
        for item in (*a[:1], *k.values(), getattr(function, "__self__", None)):
            name = getattr(item, "name", None) if hasattr(item, "read") else item
            if isinstance(name, str | os.PathLike):
                found.append(os.path.realpath(os.fspath(name)))
        return found

    def trees(obj: Any) -> int:
        for name in ("num_trees", "num_boosted_rounds"):
            if library(obj) and callable(getattr(obj, name, None)):
                return int(getattr(obj, name)())
        return 0

    def fitted(obj: Any) -> bool:
        if obj is None or not library(obj) or isinstance(obj, type):
            return False
        if trees(obj) > 0:
            return True
        if callable(getattr(obj, "__sklearn_is_fitted__", None)):  # scikit-learn's own protocol (Pipeline)
            return bool(obj.__sklearn_is_fitted__())
        if callable(getattr(obj, "is_fitted", None)):  # CatBoost
            return bool(obj.is_fitted())
        if callable(getattr(obj, "get_booster", None)):
            try:
                return trees(obj.get_booster()) > 0
            except Exception:
                return False
        state = getattr(obj, "__dict__", {})
        return any(n.endswith("_") and not n.startswith("_") for n in state)

    def module(obj: Any) -> bool:
        return library(obj) and callable(getattr(obj, "parameters", None)) and callable(obj)

    def stepped(obj: Any) -> bool:
        groups = getattr(obj, "param_groups", None) if library(obj) else None
        return any(p.grad is not None for g in groups or () for p in g.get("params", ()))

    def evidence(stage: str, a: tuple[Any, ...], k: dict[str, Any], result: Any) -> bool:
        target = getattr(function, "__self__", None)
        target = None if type(target).__name__ == "module" else target
        if stage == "data_loaded":
            read = rows(result) > 0 or hasattr(result, "read") or bool(getattr(result, "size", 0))
            inside = any(p.startswith(_link[2]) for p in paths(a, k))
            return outside(function) and result is not None and read and inside
        if stage == "model_defined":
            kinds = ("fit", "predict", "forward", "num_trees", "num_boosted_rounds")
            return library(result) and not isinstance(result, type) and any(hasattr(result, n) for n in kinds)
        if stage == "model_trained":
            if fitted(target) or fitted(result) or stepped(target):
                return True
            if getattr(target, "requires_grad", False) and library(target):  # loss.backward()
                return True
            if getattr(result, "global_step", 0) > 0:  # a transformers Trainer's train()
                return True
            return target is None and outside(function) and rows(result) > 0  # cross_val_score(...)
        if stage == "predictions_made":
            source = target if target is not None else function
            return rows(result) > 0 and (fitted(source) or module(source))
        if stage == "submission_written":
            written = [p for p in paths(a, k) if not p.startswith(_link[2])]
            return any(os.path.isfile(p) for p in written) or (hasattr(result, "write") and bool(written))
        return False

    def call(*a: Any, **k: Any) -> Any:
        result = function(*a, **k)
        pending = [s for s in stages if s not in _seen]
        if pending:
            try:  # noqa: SIM105 - no imports beyond os in the program's copy
                send([s for s in pending if evidence(s, a, k, result)])
            except Exception:
                pass
        return result

    return call
