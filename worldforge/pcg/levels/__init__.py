"""Levels: reply text -> ``drop_block`` program -> Science Birds level XML, and the letter glyph programs.

``extract`` (the official code extraction), ``convert`` (drop rule, level XML), ``level`` (the parsed
level model), ``drop_plan`` (grid -> block decomposition that survives the drop rule) and ``glyphs``
(letter programs the mock generator and the classifier's training data use).
"""
