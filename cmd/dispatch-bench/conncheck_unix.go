//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package main

import (
	"crypto/tls"
	"errors"
	"net"
	"syscall"
)

// open reports whether a kept connection is still open: a peek that does
// not wait finds neither the server's close (end of stream) nor an error.
// Bytes waiting count as open; the next answer's parse judges them.
func open(nc net.Conn) bool {
	if t, ok := nc.(*tls.Conn); ok {
		nc = t.NetConn()
	}
	sc, ok := nc.(syscall.Conn)
	if !ok {
		return true
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return false
	}
	alive := true
	var b [1]byte
	err = rc.Read(func(fd uintptr) bool {
		n, _, rerr := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
		alive = n > 0 || errors.Is(rerr, syscall.EAGAIN) || errors.Is(rerr, syscall.EWOULDBLOCK) || errors.Is(rerr, syscall.EINTR)
		return true
	})
	return err == nil && alive
}
