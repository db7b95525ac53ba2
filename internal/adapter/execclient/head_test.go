package execclient

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"testing"
)

// checkHead holds quickHead to http.ReadResponse on the same bytes:
// where quickHead takes a head, ReadResponse reads the same status,
// length, Close and body.
func checkHead(t *testing.T, b []byte) {
	t.Helper()
	start, n, closeConn, ok := quickHead(b)
	if !ok {
		return
	}
	br := bufio.NewReader(bytes.NewReader(b))
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatalf("quickHead took %q, ReadResponse refused it: %v", b, err)
	}
	if resp.StatusCode != http.StatusOK || resp.ContentLength != int64(n) || resp.Close != closeConn {
		t.Fatalf("%q: quickHead 200 len %d close %v, ReadResponse %d len %d close %v",
			b, n, closeConn, resp.StatusCode, resp.ContentLength, resp.Close)
	}
	body, _ := io.ReadAll(resp.Body)
	if start+n <= len(b) && !bytes.Equal(body, b[start:start+n]) {
		t.Fatalf("%q: body %q, ReadResponse's %q", b, b[start:start+n], body)
	}
}

func TestQuickHead(t *testing.T) {
	t.Parallel()
	tests := []struct {
		head      string
		ok        bool
		length    int
		closeConn bool
	}{
		{"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n{\"code\":200}", true, 12, false},
		{"HTTP/1.1 200 OK\r\nContent-Type: text/html;charset=UTF-8\r\ncontent-length:  2 \r\nDate: x\r\n\r\n{}", true, 2, false},
		{"HTTP/1.1 200\r\nContent-Length: 0\r\nConnection: close\r\n\r\n", true, 0, true},
		{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: Keep-Alive\r\n\r\n{}", true, 2, false},
		{"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", false, 0, false},
		{"HTTP/1.1 200 OK\r\n\r\n{}", false, 0, false}, // no length: read to close
		{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}", false, 0, false},
		{"HTTP/1.1 200 OK\r\nContent-Length: -2\r\n\r\n{}", false, 0, false},
		{"HTTP/1.1 500 Oops\r\nContent-Length: 2\r\n\r\n{}", false, 0, false},
		{"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}", false, 0, false},
		{"HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\n{}", false, 0, false},
		{"HTTP/1.1 200 OK\nContent-Length: 2\n\n{}", false, 0, false},
		{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n folded\r\n\r\n{}", false, 0, false},
		{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: upgrade\r\n\r\n{}", false, 0, false},
		{"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n", false, 0, false}, // head not complete
	}
	for _, tc := range tests {
		t.Run(tc.head, func(t *testing.T) {
			t.Parallel()
			_, n, c, ok := quickHead([]byte(tc.head))
			if ok != tc.ok || ok && (n != tc.length || c != tc.closeConn) {
				t.Fatalf("quickHead = len %d close %v ok %v, want len %d close %v ok %v", n, c, ok, tc.length, tc.closeConn, tc.ok)
			}
			checkHead(t, []byte(tc.head))
		})
	}
}

func FuzzQuickHead(f *testing.F) {
	for _, s := range []string{
		"HTTP/1.1 200 OK\r\nContent-Length: 12\r\n\r\n{\"code\":200}",
		"HTTP/1.1 200\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
		"HTTP/1.1 200 OK\r\nDate: Sun, 29 Nov 2026 04:00:00 GMT\r\nContent-Length: 2\r\n\r\n{}",
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) { checkHead(t, b) })
}
