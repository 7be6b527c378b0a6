"""Similarity: the letter classifier (``classifier``: bundled checkpoint, the official model by id or
folder) and its processor-exact input path (``classifier_input``). torch loads only when a model does.
"""
