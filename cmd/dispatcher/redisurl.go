package main

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// loadRedisURL returns the Redis URL given inline (value, from
// DISPATCHER_REDIS_URL or its flag) or in a file (path, from
// DISPATCHER_REDIS_URL_FILE or its flag: a mounted secret, since the URL
// may hold a password), but not both. The file holds the URL alone;
// surrounding whitespace is dropped. A file that is set must hold a URL, so
// that a secret mounted empty stops the start-up instead of running on the
// embedded store. Errors never include the URL.
func loadRedisURL(value, path string) (string, error) {
	switch {
	case value != "" && path != "":
		return "", errors.New("the Redis URL is given both inline (DISPATCHER_REDIS_URL or -redis-url) and in a file (DISPATCHER_REDIS_URL_FILE or -redis-url-file): set one")
	case path == "":
		return value, nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("DISPATCHER_REDIS_URL_FILE: %w", err)
	}
	url := strings.TrimSpace(string(b))
	switch {
	case url == "":
		return "", fmt.Errorf("DISPATCHER_REDIS_URL_FILE %s: holds no URL", path)
	case strings.ContainsAny(url, "\r\n"):
		return "", fmt.Errorf("DISPATCHER_REDIS_URL_FILE %s: holds more than one line; want the URL alone", path)
	}
	return url, nil
}
