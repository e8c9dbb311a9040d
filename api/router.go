package api

import (
	"log/slog"
	"net/http"
	"slices"
	"time"

	"github.com/go-chi/chi/v5"
	"github.com/go-chi/chi/v5/middleware"

	"github.com/dispatcher/dispatcher/dispatch"
)

// Defaults of Options.
const (
	// DefaultMaxBody is the largest request body New accepts when
	// Options.MaxBody is zero: 4 MiB.
	DefaultMaxBody = 4 << 20
	// DefaultRequestTimeout bounds each request when
	// Options.RequestTimeout is zero.
	DefaultRequestTimeout = 10 * time.Second
)

// Options tunes the handler New returns. Zero fields take the defaults.
type Options struct {
	// MaxBody is the largest request body in bytes (default DefaultMaxBody);
	// a larger one is answered 413.
	MaxBody int64
	// RequestTimeout bounds the context of each request, so every store
	// call it makes (default DefaultRequestTimeout). A store call that runs
	// past it is answered 503 unavailable.
	RequestTimeout time.Duration
	// AdminTokens and ClientTokens are the bearer tokens of the two roles
	// (DESIGN §6); several per role allow rotation. A token in both is
	// admin. They see every pool and have no rate limit. With none at all
	// and no Tokens, every route is open to anyone.
	AdminTokens, ClientTokens []string
	// Tokens, if set, holds further tokens, known by their digests, each
	// with a name, a role, the pools it may see and a rate limit (DESIGN
	// §11); replacing its contents takes effect with the next request.
	// Set, it secures the API even while it holds no token.
	Tokens *TokenSet
	// Limiter holds the tokens with a RatePerSec to their rate (default: a
	// LocalLimiter, for one process).
	Limiter Limiter
	// RateLimitFailClosed answers 503 when the Limiter fails; unset, the
	// request goes on unlimited (fails open). Either way the failure is
	// logged and counted.
	RateLimitFailClosed bool
	// Metrics receives the API's metrics and is served at GET /metrics
	// (default: NewMetrics(NewRegistry(), DefaultMaxPoolLabels)). Pass one
	// to serve the collectors of other packages on the same endpoint.
	Metrics *Metrics
	// Logger receives one line per request and the detail of internal
	// errors (default: discard). Tokens are never logged.
	Logger *slog.Logger
	// Spec is the OpenAPI document served at GET /openapi.yaml as
	// application/yaml; without it that route answers 404.
	Spec []byte
	// Version is the service's version, shown by GET /healthz and
	// /readyz; empty, they show none.
	Version string
	// MaxWatchers bounds the open watch streams (GET …/watch) of this
	// handler (default DefaultMaxWatchers); one more is answered 503.
	MaxWatchers int
	// Stopping, when closed, ends every open watch stream: close it when
	// the server begins to shut down (http.Server.RegisterOnShutdown), so
	// that the drain does not wait for streams that never end.
	Stopping <-chan struct{}
	// WatchKeepAlive is how often a quiet watch stream sends a comment
	// line (default 15 s).
	WatchKeepAlive time.Duration
}

// server holds what the handlers share.
type server struct {
	svc     *dispatch.Service
	maxBody int64
	timeout time.Duration
	auth    *authenticator // nil: open
	limiter Limiter
	// failClosed refuses requests while the limiter fails.
	failClosed bool
	metrics    *Metrics
	log        *slog.Logger
	lines      *lineHandlers // the access log's handlers (observe)
	spec       []byte
	version    string
	mux        *chi.Mux

	watchers  *hub
	stopping  <-chan struct{}
	keepAlive time.Duration
}

// New returns the HTTP handler of the v1 API over svc. It panics if svc is
// nil or a token is empty.
func New(svc *dispatch.Service, opts Options) http.Handler {
	if svc == nil {
		panic("api: New with a nil Service")
	}
	if opts.MaxBody <= 0 {
		opts.MaxBody = DefaultMaxBody
	}
	if opts.RequestTimeout <= 0 {
		opts.RequestTimeout = DefaultRequestTimeout
	}
	if opts.Metrics == nil {
		opts.Metrics = NewMetrics(NewRegistry(), DefaultMaxPoolLabels)
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Limiter == nil {
		opts.Limiter = NewLocalLimiter(nil)
	}
	if opts.MaxWatchers <= 0 {
		opts.MaxWatchers = DefaultMaxWatchers
	}
	if opts.WatchKeepAlive <= 0 {
		opts.WatchKeepAlive = keepAliveEvery
	}
	s := &server{
		svc:        svc,
		maxBody:    opts.MaxBody,
		timeout:    opts.RequestTimeout,
		auth:       newAuthenticator(opts.AdminTokens, opts.ClientTokens, opts.Tokens),
		limiter:    opts.Limiter,
		failClosed: opts.RateLimitFailClosed,
		metrics:    opts.Metrics,
		log:        opts.Logger,
		lines:      &lineHandlers{base: opts.Logger.Handler()},
		spec:       opts.Spec,
		version:    opts.Version,
		mux:        chi.NewRouter(),

		stopping:  opts.Stopping,
		keepAlive: opts.WatchKeepAlive,
	}
	s.watchers = newHub(svc.Snapshot, s.encodeSnapshot, opts.MaxWatchers, opts.RequestTimeout)
	s.routes()
	return router{Mux: s.mux, front: s.front(s.timeout, isWatch)(s.mux)}
}

// router is the API's handler: chi's router (its routes, for chi.Walk)
// with front in front of it rather than in its middleware. front's request
// context holds chi's route context (reqContext.Value), and chi, finding
// one, does not add its own with context.WithValue and a copy of the
// request (r.WithContext): a request copied once instead of twice.
type router struct {
	*chi.Mux
	front http.Handler
}

// ServeHTTP serves r through front.
func (h router) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.front.ServeHTTP(w, r) }

// routes registers every endpoint, grouped by the role that may call it;
// each group checks its role with require.
func (s *server) routes() {
	r := s.mux
	// middleware.GetHead: HEAD goes wherever GET does (RFC 9110 §9.3.2),
	// for load balancers' and uptime checkers' probes.
	r.Use(s.recoverPanics, middleware.GetHead) // behind front (New)
	r.NotFound(s.handle(s.notFound))
	r.MethodNotAllowed(s.handle(s.methodNotAllowed))

	// Open to everyone: probes and the contract.
	r.Group(func(r chi.Router) {
		r.Get("/healthz", s.handle(s.healthz))
		r.Get("/readyz", s.handle(s.readyz))
		r.Get("/openapi.yaml", s.handle(s.openAPI))
		// The dashboard's files; its data calls carry the user's token.
		r.Get("/ui/*", uiHandler().ServeHTTP)
		r.Get("/ui", http.RedirectHandler("/ui/", http.StatusMovedPermanently).ServeHTTP)
	})

	// Clients (and admins): dispatch, complete, cancel and read.
	r.Group(func(r chi.Router) {
		r.Use(s.require(RoleClient))
		r.Get("/v1/pools", s.v1(s.listPools, "limit", "cursor"))
		r.Get("/v1/pools/{pool}", s.v1(s.getPool))
		r.Get("/v1/pools/{pool}/scales", s.v1(s.listScales, "limit", "cursor"))
		r.Get("/v1/pools/{pool}/scales/{compId}", s.v1(s.getScale))
		r.Get("/v1/pools/{pool}/scales/{compId}/orders", s.v1(s.listScaleOrders, "limit", "cursor"))
		r.Post("/v1/pools/{pool}/batches", s.v1(s.dispatch, "dryRun"))
		r.Get("/v1/pools/{pool}/batches/{batchId}", s.v1(s.getBatch))
		r.Get("/v1/pools/{pool}/orders/{orderId}", s.v1(s.getOrder))
		r.Post("/v1/pools/{pool}/orders/{orderId}/complete", s.v1(s.completeOrder))
		r.Post("/v1/pools/{pool}/orders/{orderId}/cancel", s.v1(s.cancelOrder))
		r.Post("/v1/pools/{pool}/completions", s.v1(s.completeOrders))
		r.Get("/v1/pools/{pool}/table", s.v1(s.table))
		// Workers heartbeat, callers report failures: both hold client
		// tokens (DESIGN §8), and neither can change a Scale's state.
		r.Post("/v1/pools/{pool}/scales/{compId}/heartbeat", s.v1(s.heartbeat))
		r.Post("/v1/pools/{pool}/orders/{orderId}/fail", s.v1(s.failOrder))
		r.Get("/v1/pools/{pool}/watch", s.v1(s.watch, "intervalMs"))
	})

	// Admins only: create, change and remove pools and Scales, and read the
	// metrics. /metrics is not open although scrapers would find that
	// simplest: its labels name every busy pool (tenants, regions) with its
	// traffic, which nobody without a token may list through /v1 either;
	// for the same reason an admin token scoped to some pools may not read
	// it.
	// Prometheus sends a bearer token natively (authorization:
	// credentials_file); give it an admin token of its own, revocable
	// without touching the others.
	r.Group(func(r chi.Router) {
		r.Use(s.require(RoleAdmin))
		r.Put("/v1/pools/{pool}", s.v1(s.putPool))
		r.Delete("/v1/pools/{pool}", s.v1(s.deletePool))
		r.Put("/v1/pools/{pool}/scales/{compId}", s.v1(s.putScale))
		r.Delete("/v1/pools/{pool}/scales/{compId}", s.v1(s.deleteScale, "force"))
		r.Post("/v1/pools/{pool}/scales/{compId}/reassign", s.v1(s.reassignScale))
		r.With(s.unscoped).Method(http.MethodGet, "/metrics", s.metrics.handler(s.log))
	})
}

// handlerFunc is a handler that returns its error instead of writing it.
type handlerFunc func(w http.ResponseWriter, r *http.Request) error

// v1 is handle for an endpoint of /v1, which takes the query parameters
// named and no other: a mistyped one (dryrun=true) would otherwise be
// ignored and the request carried out as if it were absent.
// errInvalidParameter names it.
func (s *server) v1(h handlerFunc, params ...string) http.HandlerFunc {
	return s.handle(func(w http.ResponseWriter, r *http.Request) error {
		if r.URL.RawQuery != "" {
			for name := range r.URL.Query() {
				if !slices.Contains(params, name) {
					return unknownParameter(name, params)
				}
			}
		}
		return h(w, r)
	})
}

// handle adapts h, answering its error as a problem.
func (s *server) handle(h handlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			s.writeError(w, r, err)
		}
	}
}
