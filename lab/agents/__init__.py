"""Agents the lab runs: the built-in loop and command agents (the reference agent, presets)."""
