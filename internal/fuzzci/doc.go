// Package fuzzci holds no code, only a test that keeps CI's fuzzing honest:
// .ci/run runs scripts/fuzz.sh, which fuzzes every fuzz target of the
// module with count budgets (-fuzztime=Nx) and a counted minimisation
// (-fuzzminimizetime=Nx). Durations would make a slow input's
// minimisation eat a target's whole window, and a -fuzztime duration
// trips a race in Go's fuzzing coordinator that fails a target that found
// nothing ("context deadline exceeded").
package fuzzci
