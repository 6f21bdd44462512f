"""Reports: the summary table, the compatibility report, its heatmap, and the diff of two runs."""
