//go:build !linux

package redistest

import "syscall"

// sysProcAttr is empty where the kernel cannot tie the server's life to the
// test binary's; t.Cleanup stops it as usual.
func sysProcAttr() *syscall.SysProcAttr { return nil }
