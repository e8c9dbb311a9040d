package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/dispatcher/dispatcher/client"
)

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// usageError is a command line that does not parse; it exits 2.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// usagef returns a usageError.
func usagef(format string, args ...any) error { return usageError{fmt.Sprintf(format, args...)} }

// env is what every command gets: the client, the output mode and the
// streams.
type env struct {
	c      *client.Client
	json   bool
	stdin  io.Reader
	stdout io.Writer
	stderr io.Writer
	getenv func(string) string
}

// command is one leaf of the command tree.
type command struct {
	name  string // "scales put"
	args  string // positional arguments, for the usage
	help  string
	flags func(fs *flag.FlagSet) // the command's own flags, nil if none
	run   func(ctx context.Context, e *env, args []string) error
	nargs [2]int // least and most positional arguments (-1: any)
}

const usageHead = `dispatchctl drives a dispatcher service.

Usage: dispatchctl [global flags] COMMAND [arguments] [flags]

Global flags (also accepted after the command):
  -url URL          the service (default $DISPATCHER_URL, else http://127.0.0.1:8080)
  -token-file FILE  read the bearer token from FILE (default: $DISPATCHER_TOKEN)
  -o text|json      output format (default text); json prints the API's objects

Commands:
`

// usage writes the list of commands.
func usage(w io.Writer) {
	fmt.Fprint(w, usageHead)
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-42s %s\n", c.name+" "+c.args, c.help)
	}
	fmt.Fprint(w, "\nRun 'dispatchctl COMMAND -h' for a command's flags. Exit status: 0 ok, 1 error, 2 usage.\n")
}

// run runs one command line and returns the exit code.
func run(ctx context.Context, args []string, getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		usage(stderr)
		return exitUsage
	}
	if args[0] == "help" || args[0] == "-h" || args[0] == "--help" || args[0] == "-help" {
		usage(stdout)
		return exitOK
	}
	var g globals
	// Global flags before the command.
	top := flag.NewFlagSet("dispatchctl", flag.ContinueOnError)
	top.SetOutput(io.Discard)
	g.register(top)
	if err := top.Parse(args); err != nil {
		fmt.Fprintln(stderr, "dispatchctl:", err)
		return exitUsage
	}
	args = top.Args()
	cmd, rest := find(args)
	if cmd == nil {
		fmt.Fprintf(stderr, "dispatchctl: unknown command %q; run 'dispatchctl help' for the list\n", strings.Join(args, " "))
		return exitUsage
	}
	fs := flag.NewFlagSet("dispatchctl "+cmd.name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: dispatchctl %s %s [flags]\n\n%s\n\nFlags:\n", cmd.name, cmd.args, cmd.help)
		fs.PrintDefaults()
	}
	g.register(fs)
	if cmd.flags != nil {
		cmd.flags(fs)
	}
	pos, err := parseInterleaved(fs, rest)
	if errors.Is(err, flag.ErrHelp) {
		return exitOK
	}
	if err == nil {
		err = checkArgs(cmd, pos)
	}
	if err != nil {
		fmt.Fprintln(stderr, "dispatchctl:", err)
		return exitUsage
	}
	e, err := g.env(getenv, stdin, stdout, stderr)
	if err != nil {
		var u usageError
		if errors.As(err, &u) {
			fmt.Fprintln(stderr, "dispatchctl:", err)
			return exitUsage
		}
		fmt.Fprintln(stderr, "dispatchctl:", err)
		return exitError
	}
	if err := cmd.run(ctx, e, pos); err != nil {
		var u usageError
		if errors.As(err, &u) {
			fmt.Fprintln(stderr, "dispatchctl:", err)
			return exitUsage
		}
		report(stderr, err)
		return exitError
	}
	return exitOK
}

// report writes a failure: a problem's title and detail, or the error.
func report(w io.Writer, err error) {
	var p *client.Error
	if errors.As(err, &p) {
		fmt.Fprintf(w, "dispatchctl: %s (%d", p.Title, p.Status)
		if p.Type != "" {
			fmt.Fprintf(w, " %s", p.Type)
		}
		fmt.Fprint(w, ")")
		if p.Detail != "" {
			fmt.Fprintf(w, ": %s", p.Detail)
		}
		fmt.Fprintln(w)
		if p.BatchID != "" {
			fmt.Fprintf(w, "dispatchctl: the batch %s may have been applied: 'dispatchctl batches get POOL %s', or dispatch again with the same -key\n", p.BatchID, p.BatchID)
		}
		return
	}
	fmt.Fprintln(w, "dispatchctl:", err)
}

// find returns the longest command whose name starts args, and the rest.
func find(args []string) (*command, []string) {
	var best *command
	n := 0
	for _, c := range commands() {
		words := strings.Fields(c.name)
		if len(words) <= len(args) && len(words) > n && strings.Join(args[:len(words)], " ") == c.name {
			best, n = &c, len(words)
		}
	}
	if best == nil {
		return nil, nil
	}
	return best, args[n:]
}

// parseInterleaved parses flags that may stand before, between and after
// the positional arguments, and returns the positional ones. "--" ends the
// flags.
func parseInterleaved(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			return nil, err
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		if len(args) > 0 && len(rest) < len(args) && args[len(args)-len(rest)-1] == "--" {
			return append(pos, rest...), nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}

// checkArgs checks the number of positional arguments.
func checkArgs(c *command, pos []string) error {
	lo, hi := c.nargs[0], c.nargs[1]
	if len(pos) < lo || (hi >= 0 && len(pos) > hi) {
		return usagef("%s takes %s; got %d argument(s) (run 'dispatchctl %s -h')", c.name, describe(c), len(pos), c.name)
	}
	return nil
}

// describe says what arguments c takes.
func describe(c *command) string {
	if c.args == "" {
		return "no arguments"
	}
	return c.args
}

// globals are the flags every command accepts.
type globals struct {
	url, tokenFile, output string
}

func (g *globals) register(fs *flag.FlagSet) {
	// Registered on two flag sets (before and after the command); the
	// second keeps what the first parsed as its default.
	fs.StringVar(&g.url, "url", g.url, "the service's URL (default $DISPATCHER_URL, else http://127.0.0.1:8080)")
	fs.StringVar(&g.tokenFile, "token-file", g.tokenFile, "a file holding the bearer token (default: $DISPATCHER_TOKEN)")
	fs.StringVar(&g.output, "o", g.output, "output: text or json")
}

// env builds the client from the flags and the environment.
func (g *globals) env(getenv func(string) string, stdin io.Reader, stdout, stderr io.Writer) (*env, error) {
	switch g.output {
	case "", "text", "json":
	default:
		return nil, usagef("-o %q: want text or json", g.output)
	}
	url := g.url
	if url == "" {
		url = getenv("DISPATCHER_URL")
	}
	if url == "" {
		url = "http://127.0.0.1:8080"
	}
	token := getenv("DISPATCHER_TOKEN")
	if g.tokenFile != "" {
		b, err := os.ReadFile(g.tokenFile)
		if err != nil {
			return nil, fmt.Errorf("reading the token: %w", err)
		}
		token = strings.TrimSpace(string(b))
		if token == "" {
			return nil, fmt.Errorf("the token file %s is empty", g.tokenFile)
		}
	}
	opts := []client.Option{client.WithUserAgent("dispatchctl")}
	if token != "" {
		opts = append(opts, client.WithToken(token))
	}
	c, err := client.New(url, opts...)
	if err != nil {
		return nil, usagef("%v", err)
	}
	return &env{c: c, json: g.output == "json", stdin: stdin, stdout: stdout, stderr: stderr, getenv: getenv}, nil
}

// emit prints v as JSON (with -o json) or with text.
func (e *env) emit(v any, text func(w io.Writer)) error {
	if e.json {
		enc := json.NewEncoder(e.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(v)
	}
	text(e.stdout)
	return nil
}
