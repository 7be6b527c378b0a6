"""The ``science-birds`` suite: prompt programs -> letter levels -> competition scores and ranking.

Modules, in the order a run uses them: ``config`` (validated options, item keys, classifier adapter),
``suite`` (the suite object and the run's orchestration), ``run`` (per-item generate -> extract ->
convert -> simulate -> render -> classify), ``stages`` (stage records), ``scores`` (diversity, weights,
per-model scores and ranking), ``report`` (the report payload and sections). Nothing is imported
here, so option parsing never pays for Box2D, Pillow or torch.
"""
