"""Reports: findings.json, report.html (and later annotated.xlsx). Reports
format what the engine found; they never recompute a check."""
