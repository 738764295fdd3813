// Package datatest locates the real datasets for tests. The data directory
// comes from the GRAFT_DATA environment variable. When it is unset, tests
// that need data are skipped, so a fresh checkout's `go test ./...` passes;
// when it is set, missing data is a test failure, because CI exports
// GRAFT_DATA precisely so that those tests run.
package datatest
