package target

import (
	"strings"
	"unicode/utf8"
)

// ResultBytes is how much of a target's response (an HTTP body, a
// synchronous Lambda's payload) a run's log keeps.
const ResultBytes = 1024

// Head is the start of a response as a run's log keeps it: b, read up to
// ResultBytes, as valid UTF-8. When cut (the response went on past b), a
// rune the cut split is dropped, not shown as a replacement character,
// and "…" marks the cut. Invalid bytes elsewhere become U+FFFD.
func Head(b []byte, cut bool) string {
	if !cut {
		return strings.ToValidUTF8(string(b), "\uFFFD")
	}
	s := string(b)
	for len(s) > 0 {
		r, size := utf8.DecodeLastRuneInString(s)
		if r != utf8.RuneError || size != 1 {
			break
		}
		s = s[:len(s)-1]
	}
	return strings.ToValidUTF8(s, "\uFFFD") + "…"
}
