"""The life of one turn, one module per phase (docs/architecture.md, "One turn package").

Imports name the phase module (``from jupyter_agent.agents.turn.start import start_turn``):
this package re-exports nothing, so importing one phase never loads the others.
"""
