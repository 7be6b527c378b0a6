"""``python -m worldforge.pcg.similarity.training``: train the bundled letter classifier.

A stub so the run's worker functions live in :mod:`.recipe`, an importable module, and pickle by
that name for the process pools whatever the start method.
"""

from __future__ import annotations

from worldforge.pcg.similarity.training.recipe import main

if __name__ == "__main__":
    raise SystemExit(main())
