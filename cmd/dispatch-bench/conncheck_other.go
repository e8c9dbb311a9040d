//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package main

import "net"

// open cannot look at the socket here: a kept connection counts as open,
// and one the server closed fails its next request.
func open(net.Conn) bool { return true }
