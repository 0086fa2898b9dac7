// Package chatd holds what belongs to the chatd service as a whole rather than
// to one of its parts: the HTTP contract, OpenAPI, which the server serves at
// /openapi.yaml and which the tests check every response shape against.
package chatd

import _ "embed"

// OpenAPI is the OpenAPI 3.1 document (YAML) describing chatd's HTTP API.
//
//go:embed openapi.yaml
var OpenAPI []byte
