"""Probes: each reads one part of the machine into a plain dict, never raising for a missing subsystem."""
