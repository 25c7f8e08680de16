"""Leases and heartbeats against a real Redis."""

from __future__ import annotations

import time

import pytest

from workers.coordination import Heartbeat, Lease, redis_client


@pytest.fixture
def client(redis_url):
    made = redis_client(redis_url)
    yield made
    made.close()


def test_a_lease_held_by_one_process_cannot_be_taken_by_another(client):
    assert Lease(client, "lease", 5).acquire()
    assert not Lease(client, "lease", 5).acquire()


def test_a_lease_lapses_when_nobody_renews_it(client):
    Lease(client, "lease", 0.2).acquire()
    time.sleep(0.4)
    assert Lease(client, "lease", 5).acquire()


def test_only_the_holder_can_release_a_lease(client):
    held = Lease(client, "lease", 5)
    held.acquire()
    Lease(client, "lease", 5).release()
    assert client.get("lease") == held.value


def test_a_lease_value_starts_with_what_its_holder_says_about_itself(client):
    lease = Lease(client, "lease", 5, value="abc host:1")
    lease.acquire()
    assert client.get("lease").startswith("abc host:1 ")


def test_a_heartbeat_keeps_a_lease_alive_past_its_ttl(client):
    lease = Lease(client, "lease", 0.3)
    lease.acquire()
    with Heartbeat(lease, 0.1):
        time.sleep(0.8)
        assert client.get("lease") == lease.value


def test_a_heartbeat_takes_back_a_lease_that_vanished_with_redis_data_without_reporting_it_lost(client):
    lease, lost = Lease(client, "lease", 0.3), []
    lease.acquire()
    with Heartbeat(lease, 0.1, on_lost=lambda: lost.append(True)):
        client.flushdb()  # what a Redis restarted without persistence holds
        time.sleep(0.4)
        assert (client.get("lease"), lost) == (lease.value, [])


def test_a_heartbeat_reports_a_lease_taken_over_by_another_process(client):
    lease, lost = Lease(client, "lease", 0.3), []
    lease.acquire()
    with Heartbeat(lease, 0.1, on_lost=lambda: lost.append(True)):
        client.set("lease", "someone else")
        time.sleep(0.4)
    assert lost
