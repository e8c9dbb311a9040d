// Package dispatcher holds what belongs to the repository as a whole: the
// OpenAPI contract of the HTTP API.
package dispatcher

import _ "embed"

// OpenAPI is openapi.yaml, the OpenAPI 3.0 description of the v1 HTTP API:
// every endpoint, schema, header and problem type. main passes it to
// api.New, which serves it at GET /openapi.yaml; tests validate requests and
// responses against it.
//
//go:embed openapi.yaml
var OpenAPI []byte
