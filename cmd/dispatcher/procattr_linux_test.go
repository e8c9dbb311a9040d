package main

import "syscall"

// procAttr kills a dispatcher process when the test binary dies without
// running its cleanups (a panic, a -timeout), so none outlives its test.
func procAttr() *syscall.SysProcAttr {
	return &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
}
