"""Helpers shared by test modules. Test modules import from here, never from one another."""
