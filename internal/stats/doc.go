// Package stats holds the summary statistics that graft's reports and tests
// quote over seeds, repetitions and epochs: mean, sample standard deviation
// and median. They live in one place so that every table computes "mean ±
// std" and "median" the same way.
//
// An empty sample has no mean, spread or middle: those functions return NaN
// for it, which prints as NaN and compares false, instead of a 0 that could
// pass for a measurement.
package stats
