"""Judgement: the independent reference and the outcome of a cell."""
