"""Scoring: the competition's weighted, normalized scores and ranking (``scores``), diversity
(``diversity``) and the official result files and report payloads (``report``); import each name
from its module.
"""
