// Command modproxy writes one module version, from a directory holding its source, into a Go module proxy
// laid out on disk (GOPROXY=file://DIR): DIR/<module>/@v/<version>.{info,mod,zip}, the zip made by the
// go command's own rules (golang.org/x/mod/zip). tools/build-original-operator.sh uses it for a dependency
// the Go module proxy refuses; the go command then checks the zip against the go.sum of the module that
// requires it, so a source that is not byte for byte the published version fails the build.
//
//	go run . PROXY_DIR MODULE_PATH VERSION SOURCE_DIR
package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

func main() {
	if len(os.Args) != 5 {
		fmt.Fprintln(os.Stderr, "usage: modproxy PROXY_DIR MODULE_PATH VERSION SOURCE_DIR")
		os.Exit(2)
	}
	proxy, path, version, src := os.Args[1], os.Args[2], os.Args[3], os.Args[4]
	if err := write(proxy, module.Version{Path: path, Version: version}, src); err != nil {
		fmt.Fprintln(os.Stderr, "modproxy:", err)
		os.Exit(1)
	}
}

func write(proxy string, m module.Version, src string) error {
	escaped, err := module.EscapePath(m.Path)
	if err != nil {
		return err
	}
	dir := filepath.Join(proxy, escaped, "@v")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	base := filepath.Join(dir, m.Version)
	info, err := json.Marshal(map[string]any{"Version": m.Version, "Time": time.Unix(0, 0).UTC()})
	if err != nil {
		return err
	}
	if err := os.WriteFile(base+".info", info, 0o644); err != nil {
		return err
	}
	gomod, err := os.ReadFile(filepath.Join(src, "go.mod"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(base+".mod", gomod, 0o644); err != nil {
		return err
	}
	f, err := os.Create(base + ".zip")
	if err != nil {
		return err
	}
	if err := zip.CreateFromDir(f, m, src); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
