//go:build !linux

package main

import "syscall"

// workerProcAttr is nil where there is no parent-death signal; the
// launcher's pipe and heartbeat tie the workers to it.
func workerProcAttr() *syscall.SysProcAttr { return nil }
