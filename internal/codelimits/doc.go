// Package codelimits holds no code, only tests that keep graft's source in
// shape. One keeps it readable: no non-test Go file in the module is over
// 800 lines, and at most five functions are over 100 lines, each one
// algorithm that reads better whole. The other keeps CI's fuzzing honest:
// .ci/run runs scripts/fuzz.sh, which fuzzes every fuzz target of the
// module with count budgets (-fuzztime=Nx) and a counted minimisation
// (-fuzzminimizetime=Nx); durations made a slow input's minimisation eat a
// target's whole window, and a -fuzztime duration can trip a race in Go's
// fuzzing coordinator that fails a target which found nothing ("context
// deadline exceeded"). Each test names whatever breaks its rule, so that it
// cannot regress unnoticed.
package codelimits
