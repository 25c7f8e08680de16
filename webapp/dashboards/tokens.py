"""API tokens for the REST API's token auth (`Authorization: Token <key>`): one per user, shown on the
token page; `manage.py drf_create_token USERNAME` makes one from a shell."""

from __future__ import annotations

from django.db import transaction
from rest_framework.authtoken.models import Token


def api_token_get(*, user) -> Token | None:
    return Token.objects.filter(user=user).first()


def api_token_rotate(*, user) -> Token:
    """Replace the user's token (or create the first one); the old key stops working at once."""
    with transaction.atomic():
        Token.objects.filter(user=user).delete()
        return Token.objects.create(user=user)
