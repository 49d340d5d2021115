"""Every helper the tests share (the fixtures are in the conftest.py files): one module a
concern, listed in docs/layout.md, "The tests' helpers"."""
