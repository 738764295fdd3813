package main

import "syscall"

// workerProcAttr has the kernel send a worker SIGTERM when the launcher
// dies.
func workerProcAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGTERM}
}
