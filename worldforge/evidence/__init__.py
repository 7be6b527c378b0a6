"""Evidence: evidence and issue bundles, the gate that re-scans them, and the secret corpus both
are measured on. The sanitizer itself lives at the bottom of the stack (:mod:`worldforge.core.redact`)
so every layer can use it; submodules here are imported on demand.
"""
