"""Benchmarks (not tests): ``python -m bench`` runs them all and prints the numbers."""
