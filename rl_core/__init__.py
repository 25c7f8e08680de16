"""Practicum's RL library: metrics and grading, the sandbox, instrumentation, rewards, policies and the
actor–learner loop. Plain values in, plain values out: nothing here imports Django, Celery or Channels.
"""
