"""Records: one result per cell, baselines of known outcomes, and the outcome vocabulary."""
