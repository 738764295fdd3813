//go:build !linux

package sysstat

// addressSpaceRoom is unknown here: no limit is assumed.
func addressSpaceRoom() (room int64, limited bool) { return 0, false }
