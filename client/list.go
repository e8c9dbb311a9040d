package client

import (
	"context"
	"iter"
	"net/url"
	"strconv"
)

// ListOptions pages a list: Limit items a page (0: the service's default,
// 1000), starting after Cursor (empty: the first page).
type ListOptions struct {
	Limit  int
	Cursor string
}

// query returns the list's query parameters.
func (o *ListOptions) query() url.Values {
	q := url.Values{}
	if o == nil {
		return q
	}
	if o.Limit > 0 {
		q.Set("limit", strconv.Itoa(o.Limit))
	}
	if o.Cursor != "" {
		q.Set("cursor", o.Cursor)
	}
	return q
}

// pages yields the items of every page that fetch returns, from the cursor
// of opts on, and stops at the first error (yielded with a zero item) or
// when the consumer stops.
func pages[T any](ctx context.Context, opts *ListOptions, fetch func(context.Context, *ListOptions) ([]T, string, error)) iter.Seq2[T, error] {
	return func(yield func(T, error) bool) {
		o := ListOptions{}
		if opts != nil {
			o = *opts
		}
		for {
			items, next, err := fetch(ctx, &o)
			if err != nil {
				var zero T
				yield(zero, err)
				return
			}
			for _, it := range items {
				if !yield(it, nil) {
					return
				}
			}
			if next == "" {
				return
			}
			o.Cursor = next
		}
	}
}
