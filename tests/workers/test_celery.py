"""The Celery app's routing and its settings for long work."""

from __future__ import annotations

from workers.celery import make_app


def test_supervisors_are_routed_to_the_gpu_queue_and_attempts_to_the_sandbox_queue():
    app = make_app("redis://127.0.0.1:6379/15", set_as_current=False)
    route = app.amqp.router.route
    assert route({}, "practicum.supervise_run")["queue"].name == "gpu"
    assert route({}, "practicum.execute_attempt")["queue"].name == "sandbox"


def test_beats_recovery_task_goes_to_the_control_queue_which_no_supervisor_holds_up():
    app = make_app("redis://127.0.0.1:6379/15", set_as_current=False)
    task = app.conf.beat_schedule["recover-runs"]["task"]
    assert app.amqp.router.route({}, task)["queue"].name == "control"


def test_beat_looks_for_orphaned_runs_as_often_as_its_setting_says(settings):
    settings.PRACTICUM_RECOVERY_INTERVAL_S = 7
    app = make_app("redis://127.0.0.1:6379/15", set_as_current=False)
    assert app.conf.beat_schedule["recover-runs"]["schedule"] == 7.0


def test_redis_visibility_timeout_follows_its_setting(settings):
    settings.PRACTICUM_VISIBILITY_TIMEOUT_S = 12345
    app = make_app("redis://127.0.0.1:6379/15", set_as_current=False)
    assert app.conf.broker_transport_options["visibility_timeout"] == 12345


def test_a_task_is_acknowledged_only_when_it_ends_and_requeued_when_its_worker_dies():
    app = make_app("redis://127.0.0.1:6379/15", set_as_current=False)
    conf = app.conf
    assert (conf.task_acks_late, conf.task_reject_on_worker_lost, conf.worker_prefetch_multiplier) == (
        True,
        True,
        1,
    )
