package api_test

import (
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// TestDashboardFiles checks the page at /ui/: served without a token, with
// a policy that lets it load and call nothing but this service, and no
// address of another host in any of its files.
func TestDashboardFiles(t *testing.T) {
	e := newEnv(t, withTokens())
	external := regexp.MustCompile(`(?i)(https?:)?//[a-z0-9.-]+\.[a-z]{2,}`)
	for path, ctype := range map[string]string{"/ui/": "text/html", "/ui/app.js": "text/javascript", "/ui/style.css": "text/css"} {
		resp, err := http.Get(e.url + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), ctype) {
			t.Errorf("GET %s: got %d %s, want 200 %s", path, resp.StatusCode, resp.Header.Get("Content-Type"), ctype)
		}
		if csp := resp.Header.Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") || !strings.Contains(csp, "connect-src 'self'") {
			t.Errorf("GET %s: Content-Security-Policy %q, want default-src 'none' and connect-src 'self'", path, csp)
		}
		if m := external.Find(body); m != nil {
			t.Errorf("%s names another host: %s", path, m)
		}
	}
	resp, err := http.Post(e.url+"/ui/", "text/plain", nil)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMethodNotAllowed {
		t.Errorf("POST /ui/: got %d, want 405", resp.StatusCode)
	}
}
