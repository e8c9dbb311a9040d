package api

import (
	"errors"
	"fmt"
	"net/http"

	"github.com/dispatcher/dispatcher/dispatch"
)

// healthz answers 200 while the process serves: it checks no dependency.
func (s *server) healthz(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, http.StatusOK, statusJSON{Status: "ok"})
	return nil
}

// readyz answers 200 when the store is reachable and 503 when it is not.
func (s *server) readyz(w http.ResponseWriter, r *http.Request) error {
	if err := s.svc.Ready(r.Context()); err != nil {
		if !errors.Is(err, dispatch.ErrUnavailable) {
			err = fmt.Errorf("%w: %w", dispatch.ErrUnavailable, err)
		}
		return err
	}
	writeJSON(w, http.StatusOK, statusJSON{Status: "ok"})
	return nil
}

// openAPI serves the contract given in Options.Spec.
func (s *server) openAPI(w http.ResponseWriter, _ *http.Request) error {
	if len(s.spec) == 0 {
		return fmt.Errorf("%w: this server was started without its OpenAPI document", errNotFound)
	}
	w.Header().Set("Content-Type", "application/yaml")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(s.spec)
	return nil
}
