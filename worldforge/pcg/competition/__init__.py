"""The competition's folder stages over ``DIR/<team>/raw/<C>/*.txt``: extract, convert, stability and
images (``stages``), similarity, diversity and the official score files (``scoring``).
"""
