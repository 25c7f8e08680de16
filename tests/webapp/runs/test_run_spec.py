"""One run specification (rl_core.run_spec): the start form, `manage.py train` and the API's schema list the
same settings with the same choices and defaults, and a setting declared once appears in all three."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path
from typing import Literal

import pytest
from django.core.management import load_command_class

from rl_core import run_spec
from rl_core.declarations import setting
from rl_core.run_spec import RunConfig, settings
from webapp.competitions.models import Competition
from webapp.dashboards.forms import RunStartForm, form_settings
from webapp.runs.management.commands.train import FILE_SETTINGS

ROOT = Path(__file__).resolve().parents[3]


def form_view() -> dict[str, tuple[tuple[str, ...], object]]:
    """setting -> (its choices, its default) as the start form offers them."""
    form = RunStartForm(competitions=Competition.objects.none())
    view = {}
    for name in form_settings():
        field = form.fields[name]
        choices = tuple(str(value) for value, _ in getattr(field, "choices", ()))
        view[name] = (choices, field.initial)
    return view


def cli_view() -> dict[str, tuple[tuple[str, ...], object]]:
    """setting -> (its choices, its default) as `manage.py train`'s options give them."""
    parser = load_command_class("webapp.runs", "train").create_parser("manage.py", "train")
    return {
        action.dest: (tuple(action.choices or ()), action.default)
        for action in parser._actions
        if action.dest in settings()
    }


def api_view(client) -> dict[str, tuple[tuple[str, ...], object]]:
    """setting -> (its choices, its default) as the OpenAPI schema describes them."""
    components = client.get("/api/schema/", {"format": "json"}).json()["components"]["schemas"]

    def enum(prop: dict) -> tuple[str, ...]:  # choices sit in their own component, e.g. PolicyEnum
        refs = [prop, *prop.get("allOf", []), *prop.get("oneOf", [])]
        for ref in refs:
            if "enum" in ref:
                return tuple(ref["enum"])
            if "$ref" in ref:
                return tuple(components[ref["$ref"].rsplit("/", 1)[1]]["enum"])
        return ()

    properties = components["RunSettings"]["properties"]
    return {name: (enum(p), p.get("default")) for name, p in properties.items()}


@pytest.mark.django_db
def test_the_form_the_cli_and_the_api_list_the_same_settings_with_the_same_choices_and_defaults(client):
    form, cli, api = form_view(), cli_view(), api_view(client)
    in_form = [name for name in settings() if name in form_settings()]
    assert list(form) == in_form and set(cli) == set(api) == set(settings())
    for name, declared in settings().items():
        default = list(declared.default) if declared.kind == "ids" else declared.default
        assert api[name] == (declared.choices, default), name
        if declared.kind == "ids":
            continue  # a list of run ids: the form's text box and the CLI's list both start empty
        # the CLI's --model falls back to the warm start's model first; a program is given as a file
        if declared.name != "model" and declared.name not in FILE_SETTINGS:
            assert cli[name] == (declared.choices, declared.default), name
        if name in form and name != "warm_start":  # the form's warm-start choices are the stored ones
            assert form[name] == (declared.choices, declared.default), name


@pytest.fixture
def warmup_setting(monkeypatch):
    """The run specification with one more setting, declared once, as a developer would add it."""
    warmup = setting(
        "none", "Learning-rate warm-up", "Ramp the learning rate up over the first updates.",
        feeds="learner", choice_labels={"linear": "linear ramp"},
    )  # fmt: skip
    extended = dataclasses.make_dataclass(
        "RunConfig",
        [("warmup", Literal["none", "linear"], warmup)],
        bases=(RunConfig,),
        frozen=True,
        namespace={"__module__": run_spec.__name__},
    )
    monkeypatch.setattr(run_spec, "RunConfig", extended)
    settings.cache_clear()
    yield "warmup"
    monkeypatch.undo()
    settings.cache_clear()


@pytest.mark.django_db
def test_a_setting_declared_once_appears_in_the_form_the_cli_and_the_api(warmup_setting, client):
    assert settings()[warmup_setting].choices == ("none", "linear")
    assert form_view()[warmup_setting] == (("none", "linear"), "none")
    assert cli_view()[warmup_setting] == (("none", "linear"), "none")
    assert api_view(client)[warmup_setting] == (("none", "linear"), "none")
    form = RunStartForm(competitions=Competition.objects.none())
    assert form.fields[warmup_setting].label == "Learning-rate warm-up"
    assert form.fields[warmup_setting] in [b.field for b in form.sections()["advanced"].fields]


SINGLE_HOME = (
    "max_staleness", "sample_ahead", "duration_weighting", "improve_from", "lm_engine", "entropy_coef",
)  # fmt: skip


@pytest.mark.parametrize("name", SINGLE_HOME)
def test_a_setting_is_named_in_at_most_one_module_of_the_web_app_and_the_workers(name):
    pattern = re.compile(rf"\b{name}\b")
    naming = [
        path.relative_to(ROOT).as_posix()
        for package in ("webapp", "workers")
        for path in (ROOT / package).rglob("*.py")
        if "migrations" not in path.parts and pattern.search(path.read_text(encoding="utf-8"))
    ]
    assert len(naming) <= 1, naming
