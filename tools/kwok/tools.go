//go:build tools

// Package tools records the command built from this module, so that `go mod tidy` keeps its dependencies.
package tools

import _ "sigs.k8s.io/kwok/cmd/kwok"
