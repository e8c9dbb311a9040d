package main

import (
	"fmt"
	"io"
	"runtime"
	"runtime/debug"
)

// version and revision name the build when the linker sets them
// (-ldflags "-X main.version=… -X main.revision=…", as deploy/Dockerfile
// does from its VERSION and REVISION build arguments, where the build sees
// no .git). Empty, buildVersion reads the module's build info.
var version, revision string

// buildInfo names the running build.
type buildInfo struct {
	Version, Revision, GoVersion string
}

// readBuildInfo returns what the linker set, else what the Go toolchain
// recorded: the module's version (a tag for `go install …@v1.2.3`,
// "(devel)" for a build in the checkout, said as "devel") and the VCS
// revision ("-dirty" when the tree had changes).
func readBuildInfo() buildInfo {
	b := buildInfo{Version: version, Revision: revision, GoVersion: runtime.Version()}
	bi, ok := debug.ReadBuildInfo()
	if ok && b.Version == "" && bi.Main.Version != "" && bi.Main.Version != "(devel)" {
		b.Version = bi.Main.Version
	}
	if ok && b.Revision == "" {
		var rev, modified string
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				modified = s.Value
			}
		}
		if rev != "" && modified == "true" {
			rev += "-dirty"
		}
		b.Revision = rev
	}
	if b.Version == "" {
		b.Version = "devel"
	}
	if b.Revision == "" {
		b.Revision = "unknown"
	}
	return b
}

// printVersion answers `dispatcher -version`.
func printVersion(w io.Writer) {
	b := readBuildInfo()
	fmt.Fprintf(w, "dispatcher %s (revision %s, %s)\n", b.Version, b.Revision, b.GoVersion)
}
