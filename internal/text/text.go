// Package text holds the two string rules xjob shares with xxl-job and
// applies in several places: how a comma-separated list splits, and how
// an over-long message is cut.
package text

import "strings"

// SplitList splits a comma-separated list (addresses, e-mails, child ids) as
// xxl-job does, trimming blanks and dropping empty items.
func SplitList(s string) []string {
	var out []string
	for _, f := range strings.Split(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}

// Truncate cuts s to at most n bytes (on a rune boundary) and marks the cut,
// as xxl-job cuts handle messages.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n
	for cut > 0 && !runeStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

func runeStart(b byte) bool { return b&0xC0 != 0x80 }
