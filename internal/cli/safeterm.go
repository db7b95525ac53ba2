package cli

import (
	"fmt"
	"io"
	"unicode/utf8"
)

// Everything the CLI prints passes through a safeWriter: names,
// descriptions, trigger messages and executor log text come from other
// people (any admin API user, any executor), and a raw ESC, CSI or OSC
// sequence in them would drive the reader's terminal (recolour, move the
// cursor, hide lines, set the window title, on some terminals write files
// or the clipboard). Control characters other than newline and tab, DEL,
// the C1 range, the bidirectional overrides ("Trojan source") and invalid
// UTF-8 are shown as visible escapes: \u001b, \u009b, \u202e, \xff. A CR
// directly before a newline is dropped (Windows line ends in executor logs).
//
// The \u00XX form is also a valid JSON string escape of the same
// character, and encoding/json already escapes C0 and invalid UTF-8, so
// -o json output stays valid JSON with the same values. The one raw
// output is xjob export (see rawWriter): apply must read it back exactly.
type safeWriter struct {
	w       io.Writer
	pending []byte // an incomplete UTF-8 sequence or a CR, held for the next Write
}

func newSafeWriter(w io.Writer) *safeWriter { return &safeWriter{w: w} }

// Write escapes p and writes it; it reports len(p) on success.
func (s *safeWriter) Write(p []byte) (int, error) {
	buf := append(s.pending, p...)
	s.pending = nil
	cut := len(buf)
	for i := len(buf) - 1; i >= 0 && i >= len(buf)-utf8.UTFMax; i-- {
		if utf8.RuneStart(buf[i]) {
			if !utf8.FullRune(buf[i:]) {
				cut = i
			}
			break
		}
	}
	if cut > 0 && buf[cut-1] == '\r' {
		cut--
	}
	s.pending = append([]byte(nil), buf[cut:]...)
	if _, err := s.w.Write(escapeTerminal(buf[:cut])); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Flush writes what Write held back.
func (s *safeWriter) Flush() error {
	if len(s.pending) == 0 {
		return nil
	}
	_, err := s.w.Write(escapeTerminal(s.pending))
	s.pending = nil
	return err
}

// escapeTerminal returns b with every unsafe character escaped.
func escapeTerminal(b []byte) []byte {
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			out = fmt.Appendf(out, `\x%02x`, b[i])
		case r == '\r' && i+1 < len(b) && b[i+1] == '\n':
			// dropped: CRLF prints as a newline
		case r == '\n' || r == '\t':
			out = append(out, byte(r))
		case r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) ||
			(r >= 0x202a && r <= 0x202e) || (r >= 0x2066 && r <= 0x2069) || r == 0x200e || r == 0x200f || r == 0x061c:
			out = fmt.Appendf(out, `\u%04x`, r)
		default:
			out = append(out, b[i:i+size]...)
		}
		i += size
	}
	return out
}

// rawWriter returns the writer under w's escaping, after flushing what it
// held back, for output that must stay byte-exact (xjob export).
func rawWriter(w io.Writer) io.Writer {
	if s, ok := w.(*safeWriter); ok {
		_ = s.Flush()
		return s.w
	}
	return w
}
