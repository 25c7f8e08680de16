"""Competitions: bundles, their validation and storage, bundled datasets, grading entry points, pages."""
