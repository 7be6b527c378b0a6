"""The secret corpus the redactor and the bundle gate are measured on: gitleaks' published rule
samples turned into the fixture under ``tests/fixtures/secrets/`` (``build``: ``python -m
worldforge.evidence.corpus.build --gitleaks PATH``, reading the Go rule files through ``source``,
``golex``, ``goeval``, ``gofile``, ``sampler`` and ``goregex``) and the recall and false-positive
figures of ``docs/secret_corpus.json`` (``measure``: ``python -m worldforge.evidence.corpus.measure``).

Code behind a committed fixture and documented figures lives in the package so it is typed, linted
and imported by the tests like the rest; nothing here is imported by ``import worldforge``.
"""
