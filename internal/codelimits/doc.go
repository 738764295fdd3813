// Package codelimits holds no code, only a test that keeps graft's source
// readable: no non-test Go file in the module is over 800 lines, and at
// most five functions are over 100 lines, each one algorithm that reads
// better whole. The test names whatever breaks a limit, so that it cannot
// regress unnoticed.
package codelimits
