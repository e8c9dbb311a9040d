package client

import (
	"context"
	"net/http"
)

// Healthz asks whether the service's process serves (liveness).
func (c *Client) Healthz(ctx context.Context) (*Health, error) {
	var h Health
	if err := c.get(ctx, "/healthz", nil, &h); err != nil {
		return nil, err
	}
	return &h, nil
}

// Readyz asks whether the service reaches its store (readiness);
// ErrUnavailable when it does not (after the RetryPolicy's retries).
func (c *Client) Readyz(ctx context.Context) (*Health, error) {
	var h Health
	if err := c.get(ctx, "/readyz", nil, &h); err != nil {
		return nil, err
	}
	return &h, nil
}

// GetOpenAPI returns the service's OpenAPI document (YAML).
func (c *Client) GetOpenAPI(ctx context.Context) ([]byte, error) {
	r, err := c.do(ctx, call{method: http.MethodGet, path: "/openapi.yaml"}, nil)
	if err != nil {
		return nil, err
	}
	return r.body, nil
}

// GetMetrics returns the service's metrics in the Prometheus text format;
// it needs an admin token where tokens are configured.
func (c *Client) GetMetrics(ctx context.Context) ([]byte, error) {
	r, err := c.do(ctx, call{method: http.MethodGet, path: "/metrics"}, nil)
	if err != nil {
		return nil, err
	}
	return r.body, nil
}
