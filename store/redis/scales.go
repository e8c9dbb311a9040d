package redis

import (
	"context"
	"encoding/base64"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/dispatcher/dispatcher/dispatch"
)

// PutScale registers the Scale (weight 1, active since now, no maxOrders,
// baseLoad spec.OrderCount or 0) or updates the fields spec sets, and
// reports whether it was registered. OrderCount X sets baseLoad to
// max(0, X − outstanding); a Scale that becomes active is active since now.
// ErrPoolNotFound, ErrUnavailable.
func (s *Store) PutScale(ctx context.Context, pool, compID string, spec dispatch.ScaleSpec, now time.Time) (dispatch.Scale, bool, error) {
	opt := func(v *int64) string {
		if v == nil {
			return ""
		}
		return strconv.FormatInt(*v, 10)
	}
	state := ""
	if spec.State != nil {
		var ok bool
		if state, ok = codeOfState[*spec.State]; !ok {
			return dispatch.Scale{}, false, errorf(dispatch.ErrInvalidState, "%q is not one of active, draining, down", *spec.State)
		}
	}
	tok := callToken(ctx)
	v, err := s.callToken(ctx, fnScalePut, pool, tok, compID, ms(now), s.retention.Milliseconds(), tok,
		opt(spec.Weight), state, opt(spec.MaxOrders), opt(spec.OrderCount), s.maxScales)
	if err != nil {
		return dispatch.Scale{}, false, translate(err, pool)
	}
	r, _ := v.([]any)
	if len(r) != 2 {
		return dispatch.Scale{}, false, fmt.Errorf("redis: scale_put replied %v", v)
	}
	sc, err := decodeScale(compID, asString(r[1]))
	return sc, asInt(r[0]) == 1, err
}

// GetScale returns the Scale: ErrPoolNotFound, ErrScaleNotFound,
// ErrUnavailable.
func (s *Store) GetScale(ctx context.Context, pool, compID string) (dispatch.Scale, error) {
	v, err := s.call(ctx, fnRead, pool, "scale", compID)
	if err != nil {
		return dispatch.Scale{}, translate(err, pool)
	}
	return decodeScale(compID, asString(v))
}

// ListScales returns at most p.Limit Scales (dispatch.DefaultLimit if it is
// not positive) sorted by orderCount, then compId, after p.Cursor, and the
// cursor of the next page ("" on the last page). A cursor is opaque; one the
// store did not make is ErrInvalidRequest. ErrPoolNotFound, ErrUnavailable.
func (s *Store) ListScales(ctx context.Context, pool string, p dispatch.Page) ([]dispatch.Scale, string, error) {
	limit := p.Limit
	if limit <= 0 {
		limit = dispatch.DefaultLimit
	}
	count, after := "", ""
	if p.Cursor != "" {
		n, id, err := decodeCursor(p.Cursor)
		if err != nil {
			return nil, "", err
		}
		count, after = strconv.FormatInt(n, 10), id
	}
	v, err := s.call(ctx, fnScalesList, pool, limit, count, after)
	if err != nil {
		return nil, "", translate(err, pool)
	}
	r, _ := v.([]any)
	if len(r) == 0 || (len(r)-1)%3 != 0 {
		return nil, "", fmt.Errorf("redis: scales_list replied %v", v)
	}
	out := make([]dispatch.Scale, 0, (len(r)-1)/3)
	for i := 1; i < len(r); i += 3 {
		sc, err := decodeScale(asString(r[i]), asString(r[i+2]))
		if err != nil {
			return nil, "", err
		}
		out = append(out, sc)
	}
	next := ""
	if asInt(r[0]) == 1 && len(out) > 0 {
		last := out[len(out)-1]
		next = encodeCursor(last.OrderCount(), last.CompID)
	}
	return out, next, nil
}

// encodeCursor makes the cursor that resumes a list after the Scale
// (count, compID).
func encodeCursor(count int64, compID string) string {
	return base64.RawURLEncoding.EncodeToString([]byte(strconv.FormatInt(count, 10) + ":" + compID))
}

// decodeCursor reads a cursor of encodeCursor: ErrInvalidRequest.
func decodeCursor(c string) (int64, string, error) {
	bad := errorf(dispatch.ErrInvalidRequest, "cursor %q was not made by this list", c)
	raw, err := base64.RawURLEncoding.DecodeString(c)
	if err != nil {
		return 0, "", bad
	}
	count, id, ok := strings.Cut(string(raw), ":")
	if !ok || !dispatch.ValidID(id) {
		return 0, "", bad
	}
	n, err := strconv.ParseInt(count, 10, 64)
	if err != nil || n < 0 || n >= 1<<53 {
		return 0, "", bad
	}
	return n, id, nil
}

// DeleteScale removes the Scale. While it has outstanding orders it fails
// with ErrScaleBusy unless force is set, which cancels them at now.
// ErrPoolNotFound, ErrScaleNotFound, ErrUnavailable.
func (s *Store) DeleteScale(ctx context.Context, pool, compID string, force bool, now time.Time) error {
	f := "0"
	if force {
		f = "1"
	}
	tok := callToken(ctx)
	_, err := s.callToken(ctx, fnScaleDel, pool, tok, compID, ms(now), s.retention.Milliseconds(), tok, f)
	if err != nil {
		return translate(err, pool)
	}
	return nil
}
