"""The ground floor: events, errors, config, secrets, state, flags, answers and the small
JSON, template and preview helpers every layer shares (docs/architecture.md).

Imports nothing of the package above it.
"""
