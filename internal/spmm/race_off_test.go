//go:build !race

package spmm

const raceEnabled = false
