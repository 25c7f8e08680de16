"""Reads for competitions. Visibility lives here, once: pages, API, files and websockets all ask it."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Q, QuerySet

from rl_core.grading import GradingSpec
from rl_core.leaderboard import MedalThresholds, medal_thresholds
from rl_core.metrics import Metric, get_metric
from webapp.competitions import storage
from webapp.competitions.models import Competition


def competitions_visible_to(*, user: User | AnonymousUser) -> QuerySet[Competition]:
    """Public competitions, plus the user's own; staff see everything."""
    if user.is_authenticated and user.is_staff:
        return Competition.objects.all()
    if user.is_authenticated:
        return Competition.objects.filter(Q(is_public=True) | Q(owner=user))
    return Competition.objects.filter(is_public=True)


def competition_get_visible(*, slug: str, user: User | AnonymousUser) -> Competition | None:
    return competitions_visible_to(user=user).filter(slug=slug).first()


def competition_get(*, slug: str) -> Competition | None:
    return Competition.objects.filter(slug=slug).first()


def competition_metric(*, competition: Competition) -> Metric:
    return get_metric(competition.metric)


def competition_public_file(*, competition: Competition, name: str) -> Path | None:
    return storage.public_file(competition.slug, name)


def competition_preview(
    *, competition: Competition, name: str = "train.csv", rows: int = 8
) -> pd.DataFrame | None:
    """The first rows of a public CSV, for the detail page."""
    path = storage.public_file(competition.slug, name)
    if path is None:
        return None
    return pd.read_csv(path, nrows=rows)


def competition_medals(*, competition: Competition) -> MedalThresholds | None:
    if not competition.leaderboard_scores:
        return None
    metric = get_metric(competition.metric)
    return medal_thresholds(competition.leaderboard_scores, higher_is_better=metric.higher_is_better)


def competition_grading_spec(*, competition: Competition) -> GradingSpec:
    return GradingSpec(
        metric=competition.metric,
        id_column=competition.id_column,
        target_columns=tuple(competition.target_columns),
    )
