"""Suites: the evaluations WorldForge ships, built on the generic framework in :mod:`worldforge.evaluation`.

``contract`` holds the built-in ``physics`` and ``planning`` adapter-contract suites; ``science_birds``
is the flagship ChatGPT4PCG / LLMs4PCG suite. The framework finds them by module name
(``EvaluationSuite.from_builtin``), so importing this package loads nothing.
"""
