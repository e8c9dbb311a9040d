package api

import (
	"embed"
	"io/fs"
	"net/http"
)

// uiFiles is the dashboard (DESIGN §9): static files, embedded, served at
// /ui/. The page is public; its data calls carry the token the user types.
//
//go:embed ui
var uiFiles embed.FS

// uiHandler serves the dashboard's files under /ui/. Its Content Security
// Policy lets the page load nothing but its own files and call nothing but
// this service.
func uiHandler() http.Handler {
	sub, err := fs.Sub(uiFiles, "ui")
	if err != nil {
		panic("api: the embedded dashboard: " + err.Error())
	}
	files := http.StripPrefix("/ui/", http.FileServerFS(sub))
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h := w.Header()
		h.Set("Content-Security-Policy", "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Cache-Control", "no-cache")
		files.ServeHTTP(w, r)
	})
}
