package api

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// healthz answers 200 while the process serves: it checks no dependency.
func (s *server) healthz(w http.ResponseWriter, _ *http.Request) error {
	writeJSON(w, http.StatusOK, statusJSON{Status: "ok", Version: s.version})
	return nil
}

// readyTimeout bounds the store's answer to a readiness probe, below the
// probes' own timeouts (deploy/k8s: 2 s): a store that hangs is not ready,
// and the probe should hear so rather than time out itself.
const readyTimeout = time.Second

// readyz answers 200 when the store answers within readyTimeout, and 503
// when it does not.
func (s *server) readyz(w http.ResponseWriter, r *http.Request) error {
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	if err := s.svc.Ready(ctx); err != nil {
		if !errors.Is(err, dispatch.ErrUnavailable) {
			err = fmt.Errorf("%w: %w", dispatch.ErrUnavailable, err)
		}
		return err
	}
	writeJSON(w, http.StatusOK, statusJSON{Status: "ok", Version: s.version})
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
