package api

import (
	"log/slog"
	"net/http"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/dispatcher/dispatcher/dispatch"
)

// DefaultMaxBody is the largest request body New accepts when
// Options.MaxBody is zero: 4 MiB.
const DefaultMaxBody = 4 << 20

// Options tunes the handler New returns. Zero fields take the defaults.
type Options struct {
	// MaxBody is the largest request body in bytes (default DefaultMaxBody);
	// a larger one is answered 413.
	MaxBody int64
	// Logger receives one line per request and the detail of internal
	// errors (default: discard).
	Logger *slog.Logger
	// Spec is the OpenAPI document served at GET /openapi.yaml as
	// application/yaml; without it that route answers 404.
	Spec []byte
}

// server holds what the handlers share.
type server struct {
	svc     *dispatch.Service
	maxBody int64
	log     *slog.Logger
	spec    []byte
	mux     *chi.Mux
}

// New returns the HTTP handler of the v1 API over svc. It panics if svc is
// nil.
func New(svc *dispatch.Service, opts Options) http.Handler {
	if svc == nil {
		panic("api: New with a nil Service")
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	s := &server{svc: svc, maxBody: opts.MaxBody, log: opts.Logger, spec: opts.Spec, mux: chi.NewRouter()}
	s.routes()
	return s.mux
}

// routes registers every endpoint. Endpoints are grouped by the role that
// may call them, so that an authentication middleware per role can be added
// to each group with Use.
func (s *server) routes() {
	r := s.mux
	r.Use(middleware.RequestID, echoRequestID, s.logRequests, s.recoverPanics)
	r.NotFound(s.handle(s.notFound))
	r.MethodNotAllowed(s.handle(s.methodNotAllowed))

	// Open to everyone: probes and the contract.
	r.Group(func(r chi.Router) {
		r.Get("/healthz", s.handle(s.healthz))
		r.Get("/readyz", s.handle(s.readyz))
		r.Get("/openapi.yaml", s.handle(s.openAPI))
	})

	// Clients (and admins): dispatch, complete, cancel and read.
	r.Group(func(r chi.Router) {
		r.Get("/v1/pools", s.handle(s.listPools))
		r.Get("/v1/pools/{pool}", s.handle(s.getPool))
		r.Get("/v1/pools/{pool}/scales", s.handle(s.listScales))
		r.Get("/v1/pools/{pool}/scales/{compId}", s.handle(s.getScale))
		r.Post("/v1/pools/{pool}/batches", s.handle(s.dispatch))
		r.Get("/v1/pools/{pool}/batches/{batchId}", s.handle(s.getBatch))
		r.Get("/v1/pools/{pool}/orders/{orderId}", s.handle(s.getOrder))
		r.Post("/v1/pools/{pool}/orders/{orderId}/complete", s.handle(s.completeOrder))
		r.Post("/v1/pools/{pool}/orders/{orderId}/cancel", s.handle(s.cancelOrder))
		r.Post("/v1/pools/{pool}/completions", s.handle(s.completeOrders))
		r.Get("/v1/pools/{pool}/table", s.handle(s.table))
	})

	// Admins only: create, change and remove pools and Scales.
	r.Group(func(r chi.Router) {
		r.Put("/v1/pools/{pool}", s.handle(s.putPool))
		r.Delete("/v1/pools/{pool}", s.handle(s.deletePool))
		r.Put("/v1/pools/{pool}/scales/{compId}", s.handle(s.putScale))
		r.Delete("/v1/pools/{pool}/scales/{compId}", s.handle(s.deleteScale))
	})
}

// handlerFunc is a handler that returns its error instead of writing it.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// handle adapts h, answering its error as a problem.
func (s *server) handle(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	}
}
