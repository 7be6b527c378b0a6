"""Programs: what a competitor submits. Prompt folders live in ``prompt``, Python ``TrialLoop``
submissions in ``submission``, the teams of a field folder in ``field`` and the static
qualification rules in ``qualify``; import each name from its module.
"""
