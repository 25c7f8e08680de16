"""`seed_competitions` installs every bundled competition through the same import as an upload."""

from __future__ import annotations

import json
from io import StringIO

import pytest
from django.core.management import call_command

from webapp.competitions.bundled import BUNDLED
from webapp.competitions.models import Competition

pytestmark = pytest.mark.django_db


def seed(*slugs) -> dict:
    out = StringIO()
    call_command("seed_competitions", *slugs, stdout=out, stderr=StringIO())
    return json.loads(out.getvalue())


def test_seeding_installs_every_bundled_competition_as_public_and_is_idempotent():
    first = seed()
    assert sorted(first["created"]) == sorted(c.slug for c in BUNDLED) and first["existing"] == []
    assert Competition.objects.filter(is_public=True, source=Competition.Source.BUNDLED).count() == len(
        BUNDLED
    )
    second = seed()
    assert second["created"] == [] and sorted(second["existing"]) == sorted(c.slug for c in BUNDLED)


def test_seeding_an_unknown_slug_is_bad_input():
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="no bundled competition called nope") as caught:
        seed("nope")
    assert caught.value.returncode == 2
