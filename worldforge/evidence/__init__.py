"""Evidence: the one sanitizer (:mod:`worldforge.evidence.sanitize`) and evidence/issue bundles.

Submodules are imported on demand so that importing the sanitizer (which CLI error handling does on
every failure) never pulls in the bundler.
"""
