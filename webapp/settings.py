"""Django settings. Every value comes from the environment; with none set, Practicum boots on
embedded defaults: an SQLite file, an in-process broker and channel layer, and `var/` for data.

| variable           | default                          | meaning                                         |
|--------------------|----------------------------------|-------------------------------------------------|
| DATABASE_URL       | sqlite:///<data dir>/practicum.db| postgresql://… or sqlite:///rel, sqlite:////abs |
| REDIS_URL          | unset = in-process               | Celery broker/results and the channel layer     |
| PRACTICUM_DATA_DIR | <project>/var                    | competitions, attempt scratch dirs, checkpoints |
| SECRET_KEY         | a random key kept in the data dir| Django's signing key (set it on every machine)  |
| DEBUG              | False                            | True: Django's debug pages instead of friendly  |
| ALLOWED_HOSTS      | localhost,127.0.0.1,[::1]        | comma-separated                                 |

Every PRACTICUM_* variable is read here, once, at start-up, through webapp.env's strict readers (README's
configuration table lists them): a malformed value stops start-up with a message naming the variable, and
the rest of the code reads `settings.PRACTICUM_...`.
"""

from __future__ import annotations

from pathlib import Path

from webapp.env import (
    env_bool,
    env_choice,
    env_database,
    env_int,
    env_list,
    env_path,
    env_redis,
    env_str,
    stored_secret_key,
)

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = env_bool("DEBUG", False)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])

DATA_DIR = env_path("PRACTICUM_DATA_DIR", BASE_DIR / "var")
DATA_DIR.mkdir(parents=True, exist_ok=True)
SECRET_KEY = env_str("SECRET_KEY", "") or stored_secret_key(DATA_DIR / "secret_key")

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "channels",
    "webapp.competitions",
    "webapp.runs",
    "webapp.dashboards",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "webapp.urls"
WSGI_APPLICATION = "webapp.wsgi.application"
ASGI_APPLICATION = "webapp.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {"default": env_database("DATABASE_URL", DATA_DIR / "practicum.db")}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS = env_redis("REDIS_URL")
if REDIS:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # channels_redis blocks up to 5 s on an empty channel; redis-py's own 5 s default socket timeout
            # would cut that wait short and drop every quiet websocket, so it must be longer.
            "CONFIG": {"hosts": [{"address": REDIS.url, "socket_timeout": 30}]},
        }
    }
    CELERY_BROKER_URL = REDIS.url
    CELERY_RESULT_BACKEND = REDIS.url
else:
    CHANNEL_LAYERS = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}
    CELERY_BROKER_URL = "memory://"
    CELERY_RESULT_BACKEND = "cache+memory://"
# Where a started run's supervisor runs (webapp.runs.dispatch): a Celery task with a broker, else a thread of
# this process. A dotted path, so the web layer never imports the workers.
RUN_DISPATCHER = "workers.dispatch.CeleryDispatcher" if REDIS else "workers.dispatch.ThreadDispatcher"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator", "OPTIONS": {"min_length": 8}},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "competitions:list"
LOGOUT_REDIRECT_URL = "competitions:list"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = False
USE_TZ = True

# Static files (the admin's, the browsable API's, the schema viewers') are served by WhiteNoise in every
# setting, the demo's daphne included: from STATIC_ROOT, compressed, after `manage.py collectstatic`, and
# straight from the apps' folders before it (WHITENOISE_USE_FINDERS), so nothing under /static/ is a 404.
STATIC_URL = "static/"
STATIC_ROOT = DATA_DIR / "static"
STATIC_ROOT.mkdir(exist_ok=True)  # WhiteNoise warns at start-up while it is missing (before collectstatic)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
WHITENOISE_USE_FINDERS = True

# Uploads: Django streams any file above FILE_UPLOAD_MAX_MEMORY_SIZE to a temporary file in
# FILE_UPLOAD_TEMP_DIR, a chunk (64 kB) at a time, so a multi-GB bundle never sits in memory. That folder is
# on the data filesystem (not /tmp, often a RAM disk) so the import moves the upload into its staging folder
# by renaming it. DATA_UPLOAD_MAX_MEMORY_SIZE bounds the form's other fields, not the files.
FILE_UPLOAD_MAX_MEMORY_SIZE = 5 * 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = 20 * 1024 * 1024
FILE_UPLOAD_TEMP_DIR = DATA_DIR / "uploads"
FILE_UPLOAD_TEMP_DIR.mkdir(exist_ok=True)

# Limits on a competition bundle, unpacked (webapp.competitions.importing.bundles): real Kaggle competitions
# have tens of thousands of files (images, geometry files) and several GB.
PRACTICUM_BUNDLE_MAX_MB = env_int("PRACTICUM_BUNDLE_MAX_MB", 8192, minimum=1)
PRACTICUM_BUNDLE_MAX_FILES = env_int("PRACTICUM_BUNDLE_MAX_FILES", 50_000, minimum=1)
PRACTICUM_ZIP_MAX_RATIO = env_int("PRACTICUM_ZIP_MAX_RATIO", 200, minimum=1)
# Retention of attempt scratch dirs of runs that are over (webapp.runs.services.scratch_prune).
PRACTICUM_SCRATCH_KEEP_DAYS = env_int("PRACTICUM_SCRATCH_KEEP_DAYS", 14, minimum=0)
PRACTICUM_SCRATCH_MAX_GB = env_int("PRACTICUM_SCRATCH_MAX_GB", 50, minimum=1)
# Where bubblewrap does not work and the worker is not root, a program runs as the worker's own user and can
# read the hidden answers: attempts are refused there unless the operator opts in (rl_core.sandbox; the
# runs app hands this to the sandbox at start-up).
PRACTICUM_ALLOW_UNISOLATED = env_bool("PRACTICUM_ALLOW_UNISOLATED", False)
# Per-user admission control (webapp.runs.quotas): runs queued or running, attempts in flight.
PRACTICUM_MAX_RUNS_PER_USER = env_int("PRACTICUM_MAX_RUNS_PER_USER", 2, minimum=1)
PRACTICUM_MAX_IN_FLIGHT_PER_USER = env_int("PRACTICUM_MAX_IN_FLIGHT_PER_USER", 8, minimum=1)
# Grading your own submission.csv (webapp.competitions.submissions): graded uploads per user and competition
# in any 24 hours, as Kaggle's daily limit (every upload that reaches the grader counts), and the file's size.
PRACTICUM_SUBMISSIONS_PER_DAY = env_int("PRACTICUM_SUBMISSIONS_PER_DAY", 5, minimum=1)
PRACTICUM_SUBMISSION_MAX_MB = env_int("PRACTICUM_SUBMISSION_MAX_MB", 50, minimum=1)
# The distributed path (workers; docs/operations.md#settings). Leases: a worker or supervisor silent this long
# is presumed dead. Tries: executions of one attempt before it is `lost`. The visibility timeout (2 days)
# must exceed the longest run. The result poll: how often a supervisor checks leases when no result comes.
# Recovery: how often celery beat looks for runs whose supervisor died.
PRACTICUM_ATTEMPT_LEASE_S = env_int("PRACTICUM_ATTEMPT_LEASE_S", 30, minimum=1)
PRACTICUM_SUPERVISOR_LEASE_S = env_int("PRACTICUM_SUPERVISOR_LEASE_S", 60, minimum=1)
PRACTICUM_MAX_TRIES = env_int("PRACTICUM_MAX_TRIES", 3, minimum=1)
PRACTICUM_VISIBILITY_TIMEOUT_S = env_int("PRACTICUM_VISIBILITY_TIMEOUT_S", 2 * 24 * 3600, minimum=1)
PRACTICUM_RESULT_POLL_S = env_int("PRACTICUM_RESULT_POLL_S", 1, minimum=1)
PRACTICUM_RECOVERY_INTERVAL_S = env_int("PRACTICUM_RECOVERY_INTERVAL_S", 60, minimum=1)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # Token first: a bad token is answered 401 with a WWW-Authenticate header, as API clients expect.
        "rest_framework.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticatedOrReadOnly"],
    "DEFAULT_PAGINATION_CLASS": "rest_framework.pagination.PageNumberPagination",
    "PAGE_SIZE": 50,
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Practicum API",
    "VERSION": "0.1.0",
    # Swagger UI and Redoc from the installed sidecar package, not a CDN: the docs work offline
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
}

LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_choice("LOG_LEVEL", "WARNING", LOG_LEVELS)},
}
