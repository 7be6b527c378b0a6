"""Similarity: the letter classifier (``classifier``: bundled checkpoint, the official model by id or
folder), its processor-exact input path (``classifier_input``) and the measured accuracy a report
quotes for it (``accuracy``). torch loads only when a model does.
"""
