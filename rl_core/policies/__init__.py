"""Policies implementing rl_core.policy.Policy: TablePolicy (tests, simulations), GrammarPolicy, LMPolicy.

Import each from its own module (`from rl_core.policies.table import TablePolicy`); nothing heavy is imported
here, so importing the package costs nothing.
"""
