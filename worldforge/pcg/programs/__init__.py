"""Programs: what a competitor submits. Prompt folders (``prompt``) are re-exported here, so
``from worldforge.pcg.programs import load_program`` keeps working; Python ``TrialLoop``
submissions live in ``submission``.
"""

from worldforge.pcg.programs import prompt
from worldforge.pcg.programs.prompt import *  # noqa: F403 - the face is the module's public API

__all__ = list(prompt.__all__)
