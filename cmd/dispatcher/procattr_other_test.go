//go:build !linux

package main

import "syscall"

// procAttr is empty where the kernel cannot tie a child's life to the test
// binary's; t.Cleanup kills it as usual.
func procAttr() *syscall.SysProcAttr { return nil }
