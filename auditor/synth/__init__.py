"""Synthetic carnets, apart from the auditor itself: the generator
(`generate`) and the breach injectors (`breaches`), shipped for
`ecarte-audit generate`, the sample carnets, the tests and the benchmarks."""
