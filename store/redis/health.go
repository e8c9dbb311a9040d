package redis

import (
	"context"
	"errors"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// errHealthPending stands in for the Scale health operations until the
// Redis store implements them (issue 17, branch issue-17-redis).
var errHealthPending = errors.New("redis: scale health not implemented yet")

// Heartbeat is not implemented yet.
func (s *Store) Heartbeat(context.Context, string, string, *int64, time.Time) (dispatch.Scale, error) {
	return dispatch.Scale{}, errHealthPending
}

// Fail is not implemented yet.
func (s *Store) Fail(context.Context, dispatch.FailRequest) (dispatch.FailResult, error) {
	return dispatch.FailResult{}, errHealthPending
}

// Tick is not implemented yet.
func (s *Store) Tick(context.Context, dispatch.TickRequest) (dispatch.TickResult, error) {
	return dispatch.TickResult{}, errHealthPending
}
