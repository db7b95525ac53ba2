package cli

import (
	"bytes"
	"io"
	"strings"
	"unicode"
)

// table aligns tab-separated cells as text/tabwriter does (padding 2,
// a column's width set by the consecutive lines that have a cell in it),
// but measures cells in terminal columns: a CJK character takes two, so
// a Chinese job description does not push the columns after it out of
// line. Write buffers; Flush writes the aligned text.
type table struct {
	out io.Writer
	buf bytes.Buffer
}

func newTable(out io.Writer) *table { return &table{out: out} }

func (t *table) Write(p []byte) (int, error) { return t.buf.Write(p) }

// Flush writes what was written so far, aligned.
func (t *table) Flush() error {
	text := t.buf.String()
	t.buf.Reset()
	if text == "" {
		return nil
	}
	trailing := strings.HasSuffix(text, "\n")
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	cells := make([][]string, len(lines))
	for i, l := range lines {
		cells[i] = strings.Split(l, "\t")
	}
	widths := make([][]int, len(lines))
	for i := range cells {
		widths[i] = make([]int, len(cells[i]))
	}
	// A line with n tabs has n aligned cells; the text after its last tab is not aligned.
	for col := 0; ; col++ {
		found := false
		for i := 0; i < len(cells); {
			if len(cells[i])-1 <= col {
				i++
				continue
			}
			found = true
			j, w := i, 0
			for ; j < len(cells) && len(cells[j])-1 > col; j++ {
				w = max(w, displayWidth(cells[j][col]))
			}
			for k := i; k < j; k++ {
				widths[k][col] = w
			}
			i = j
		}
		if !found {
			break
		}
	}
	var b strings.Builder
	for i, cs := range cells {
		for c, cell := range cs {
			b.WriteString(cell)
			if c < len(cs)-1 {
				b.WriteString(strings.Repeat(" ", widths[i][c]-displayWidth(cell)+2))
			}
		}
		if i < len(cells)-1 || trailing {
			b.WriteByte('\n')
		}
	}
	_, err := io.WriteString(t.out, b.String())
	return err
}

// displayWidth is how many terminal columns s takes: two for East Asian
// wide and fullwidth characters, none for combining marks and zero-width
// characters, one for the rest.
func displayWidth(s string) int {
	n := 0
	for _, r := range s {
		switch {
		case r == 0x200B || r == 0x200C || r == 0x200D || r == 0xFEFF || unicode.Is(unicode.Mn, r):
		case wide(r):
			n += 2
		default:
			n++
		}
	}
	return n
}

// wide reports the East Asian wide and fullwidth ranges (Unicode UAX #11).
func wide(r rune) bool {
	switch {
	case r < 0x1100:
		return false
	case r <= 0x115F, r >= 0x2E80 && r <= 0x303E, r >= 0x3041 && r <= 0x33FF,
		r >= 0x3400 && r <= 0x4DBF, r >= 0x4E00 && r <= 0x9FFF, r >= 0xA000 && r <= 0xA4CF,
		r >= 0xAC00 && r <= 0xD7A3, r >= 0xF900 && r <= 0xFAFF, r >= 0xFE30 && r <= 0xFE4F,
		r >= 0xFF00 && r <= 0xFF60, r >= 0xFFE0 && r <= 0xFFE6,
		r >= 0x1F300 && r <= 0x1F64F, r >= 0x1F900 && r <= 0x1F9FF,
		r >= 0x20000 && r <= 0x2FFFD, r >= 0x30000 && r <= 0x3FFFD:
		return true
	}
	return false
}
