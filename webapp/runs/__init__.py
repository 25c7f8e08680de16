"""Runs, attempts and learner steps; services that persist them and publish live events."""
