package main

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/dispatcher/dispatcher/api"
)

// tokenBytes is the randomness of a token made by `dispatcher token`: 256
// bits, 43 characters of base64url, which RFC 6750's token68 allows.
const tokenBytes = 32

// newToken prints a new random token on the first line of stdout and its
// entry for DISPATCHER_TOKENS_FILE on the second, so that an operator never
// hashes a token by hand. The token is printed once and kept nowhere: it
// goes to the client, the entry to the file.
func newToken(args []string, rand io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("dispatcher token", flag.ContinueOnError)
	fs.SetOutput(stderr)
	name := fs.String("name", "", "the token's name in logs and metrics (required): 1 to 64 of A-Z a-z 0-9 . _ -")
	role := fs.String("role", "client", "client or admin")
	pools := fs.String("pools", "", "comma-separated path.Match patterns of the pools it may see, e.g. eu-*,shared; empty: every pool")
	rate := fs.Float64("rate", 0, "requests a second it may make, all replicas together; 0: no limit")
	fs.Usage = func() {
		fmt.Fprint(fs.Output(), `Usage: dispatcher token -name NAME [-role client|admin] [-pools PATTERNS] [-rate N]

Prints a new random token (first line: give it to the client) and its entry
for DISPATCHER_TOKENS_FILE (second line: add it to the file's "tokens").

Flags:
`)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %v", fs.Args())
	}
	b := make([]byte, tokenBytes)
	if _, err := io.ReadFull(rand, b); err != nil {
		return fmt.Errorf("reading randomness: %w", err)
	}
	token := base64.RawURLEncoding.EncodeToString(b)
	digest := sha256.Sum256([]byte(token))
	entry := struct {
		Name       string   `json:"name"`
		SHA256     string   `json:"sha256"`
		Role       string   `json:"role"`
		Pools      []string `json:"pools,omitempty"`
		RatePerSec float64  `json:"ratePerSec,omitempty"`
	}{Name: *name, SHA256: hex.EncodeToString(digest[:]), Role: *role, RatePerSec: *rate}
	if *pools != "" {
		for p := range strings.SplitSeq(*pools, ",") {
			entry.Pools = append(entry.Pools, strings.TrimSpace(p))
		}
	}
	line, err := json.Marshal(entry)
	if err != nil {
		return err
	}
	// The file's own check, so that a line printed is a line that loads.
	if _, err := api.ParseTokensFile([]byte(`{"tokens": [` + string(line) + `]}`)); err != nil {
		return err
	}
	_, err = fmt.Fprintf(stdout, "%s\n%s\n", token, line)
	return err
}

// cryptoRand is the randomness of newToken.
var cryptoRand io.Reader = rand.Reader
