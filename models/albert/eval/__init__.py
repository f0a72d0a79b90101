"""Scoring, written from the reference definitions: the official SQuAD rules, and the
classification and regression metrics (checked against scikit-learn and SciPy)."""
