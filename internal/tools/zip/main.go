// Command zip packs a Lambda bootstrap binary into a deployment zip:
// one entry named "bootstrap" with mode 0755 and a fixed timestamp, so the
// same binary always gives the same zip (stable CodeSha256, no spurious
// redeploys) and no zip(1) is needed on the build machine.
//
// Usage: go run ./internal/tools/zip <out.zip> <bootstrap>
package main

import (
	"archive/zip"
	"fmt"
	"io"
	"os"
	"time"
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: zip <out.zip> <bootstrap>")
		os.Exit(2)
	}
	if err := pack(os.Args[1], os.Args[2]); err != nil {
		fmt.Fprintln(os.Stderr, "zip:", err)
		os.Exit(1)
	}
}

func pack(out, bin string) (err error) {
	in, err := os.Open(bin)
	if err != nil {
		return fmt.Errorf("open binary: %w", err)
	}
	defer in.Close()
	f, err := os.Create(out)
	if err != nil {
		return fmt.Errorf("create zip: %w", err)
	}
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("close zip: %w", cerr)
		}
	}()
	zw := zip.NewWriter(f)
	hdr := &zip.FileHeader{Name: "bootstrap", Method: zip.Deflate, Modified: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)}
	hdr.SetMode(0o755)
	w, err := zw.CreateHeader(hdr)
	if err != nil {
		return fmt.Errorf("zip entry: %w", err)
	}
	if _, err := io.Copy(w, in); err != nil {
		return fmt.Errorf("zip write: %w", err)
	}
	if err := zw.Close(); err != nil {
		return fmt.Errorf("zip finish: %w", err)
	}
	return nil
}
