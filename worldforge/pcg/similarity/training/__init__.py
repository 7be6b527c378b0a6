"""The recipe of the bundled letter classifier: the letter families it is trained and measured on
(``families``, with the block-built family in ``blocks`` and shared grid helpers in ``grids``; the
frozen evaluation-only family in ``unseen``, built by the placement rule in ``lintel``),
corpus rendering, training and measurement (``loop``), the model card and dataset manifest
(``card``) and the run that writes the shipped checkpoint (``recipe``;
``python -m worldforge.pcg.similarity.training``). It lives in the package so the code behind a
shipped artifact is typed, linted and imported like the rest; nothing here is imported by
``import worldforge`` or the CLI, and torch loads only through :mod:`worldforge.heavy` when a run
trains.
"""
