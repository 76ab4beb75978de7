"""The startd policy engine: slot states and activities, claims, retirement, draining.

Pure (clock, measurements and events in; state changes and actions out). Start with
:class:`condorpy.policy.engine.PolicyEngine` and docs/policy.md.
"""
