package api

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"

	"github.com/dispatcher/dispatcher/dispatch"
)

func batchPath(pool, batchID string) string { return poolPath(pool) + "/batches/" + batchID }

// dispatch assigns a batch: 201 with Location, or 200 without a batchId for
// ?dryRun=true. A replay of an Idempotency-Key answers the stored batch
// again with Idempotent-Replayed: true.
func (s *server) dispatch(w http.ResponseWriter, r *http.Request) error {
	pool := pathID(r, "pool")
	dryRun, err := queryBool(r, "dryRun")
	if err != nil {
		return err
	}
	key, err := idempotencyKey(r)
	if err != nil {
		return err
	}
	body, err := s.readBody(w, r)
	if err != nil {
		return err
	}
	orders, err := parseOrders(body)
	if err != nil {
		return err
	}
	in := dispatch.DispatchInput{Pool: pool, Orders: orders, IdempotencyKey: key, DryRun: dryRun}
	if key != "" {
		in.Fingerprint = fingerprint(r, body)
	}
	batch, replayed, err := s.svc.Dispatch(r.Context(), in)
	if err != nil {
		return err
	}
	if dryRun {
		writeBatch(w, r, http.StatusOK, batch)
		return nil
	}
	w.Header()["Location"] = []string{batchPath(pool, batch.ID)}
	if replayed {
		w.Header().Set("Idempotent-Replayed", "true")
	} else {
		s.metrics.ObserveBatch(batch.Pool, string(batch.Strategy), len(batch.Assignments))
	}
	writeBatch(w, r, http.StatusCreated, batch)
	return nil
}

// parseOrders reads {"orders": [{"id", "key"}, …]}; id and key are
// optional, but present they must not be empty (the Service takes an empty
// id or key for an absent one). The usual body takes fastOrders' one pass;
// any other, strictOrders'.
func parseOrders(body []byte) ([]dispatch.OrderInput, error) {
	if orders, ok := fastOrders(body); ok {
		return orders, nil
	}
	return strictOrders(body)
}

// strictOrders is parseOrders on the general parser of decode.go, which
// names the first problem of a body.
func strictOrders(body []byte) ([]dispatch.OrderInput, error) {
	o, err := parseObject(body)
	if err != nil {
		return nil, err
	}
	elems := o.objects("orders")
	orders := make([]dispatch.OrderInput, len(elems))
	for i, e := range elems {
		id, key := e.string("id"), e.string("key")
		if err := e.close(); err != nil {
			return nil, err
		}
		if id != nil {
			if *id == "" {
				return nil, fmt.Errorf("%w: %s is empty; leave it out to have one generated", dispatch.ErrInvalidID, e.at("id"))
			}
			orders[i].ID = *id
		}
		if key != nil {
			if *key == "" {
				return nil, fmt.Errorf("%w: %s is empty; it must be 1 to %d bytes of UTF-8", dispatch.ErrInvalidKey, e.at("key"), dispatch.MaxKeyBytes)
			}
			orders[i].Key = *key
		}
	}
	return orders, o.close()
}

// fingerprint identifies a request for its Idempotency-Key: the hex SHA-256
// of its method, path, raw query and body bytes. Each part but the last is
// length-prefixed, so no two requests share the input.
func fingerprint(r *http.Request, body []byte) string {
	h := sha256.New()
	for _, part := range []string{r.Method, r.URL.EscapedPath(), r.URL.RawQuery} {
		fmt.Fprintf(h, "%d:%s\n", len(part), part)
	}
	h.Write(body)
	return hex.EncodeToString(h.Sum(nil))
}

// getBatch answers a recorded batch as first answered.
func (s *server) getBatch(w http.ResponseWriter, r *http.Request) error {
	batch, err := s.svc.GetBatch(r.Context(), pathID(r, "pool"), pathID(r, "batchId"))
	if err != nil {
		return err
	}
	writeBatch(w, r, http.StatusOK, batch)
	return nil
}
