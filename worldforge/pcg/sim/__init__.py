"""Simulation and images: Box2D stability (``physics``), the black-on-white similarity image
(``render``, ``png``) and the batched simulate + render pipeline over a process pool (``pipeline``).
"""
