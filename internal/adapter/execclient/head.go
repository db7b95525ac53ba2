package execclient

import "bytes"

// quickHead reads the reply head almost every executor sends to a call,
// "HTTP/1.1 200 <reason>" with a Content-Length and a few plain headers,
// from the bytes already received, without net/http's textproto reader,
// header map and Response (half of the direct path's own CPU). ok is
// false for anything else (another status or version, chunked or
// length-less bodies, a Connection header other than close or
// keep-alive, bare LF line ends, folded lines, bytes net/http would
// refuse, a head not yet complete): the caller then reads the reply with
// http.ReadResponse, which sees the same bytes, as none are consumed
// here. Where ok is true, http.ReadResponse reads the same status,
// length and Close (FuzzQuickHead holds it to that).
func quickHead(b []byte) (bodyStart, contentLength int, closeConn, ok bool) {
	const status = "HTTP/1.1 200"
	end := bytes.Index(b, []byte("\r\n\r\n"))
	if end < 0 || !bytes.HasPrefix(b, []byte(status)) {
		return 0, 0, false, false
	}
	head := b[:end+2] // every line with its CRLF
	line, rest, _ := bytes.Cut(head, []byte("\r\n"))
	if len(line) > len(status) && line[len(status)] != ' ' || !printable(line) {
		return 0, 0, false, false
	}
	contentLength = -1
	for len(rest) > 0 {
		line, rest, _ = bytes.Cut(rest, []byte("\r\n"))
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 || !token(line[:colon]) || !printable(line[colon+1:]) {
			return 0, 0, false, false
		}
		name, value := line[:colon], bytes.Trim(line[colon+1:], " \t")
		switch {
		case equalFold(name, "content-length"):
			n, good := digits(value)
			if !good || contentLength >= 0 {
				return 0, 0, false, false // malformed or repeated
			}
			contentLength = n
		case equalFold(name, "connection"):
			switch {
			case equalFold(value, "close"):
				closeConn = true
			case equalFold(value, "keep-alive"):
			default:
				return 0, 0, false, false
			}
		case equalFold(name, "transfer-encoding"), equalFold(name, "trailer"):
			return 0, 0, false, false
		}
	}
	if contentLength < 0 {
		return 0, 0, false, false
	}
	return end + 4, contentLength, closeConn, true
}

// printable reports whether b holds only visible ASCII, spaces and tabs.
func printable(b []byte) bool {
	for _, c := range b {
		if (c < ' ' && c != '\t') || c >= 0x7f {
			return false
		}
	}
	return true
}

// token reports whether b is an HTTP header name (RFC 9110 token).
func token(b []byte) bool {
	for _, c := range b {
		switch {
		case 'a' <= c && c <= 'z', 'A' <= c && c <= 'Z', '0' <= c && c <= '9':
		case bytes.IndexByte([]byte("!#$%&'*+-.^_`|~"), c) >= 0:
		default:
			return false
		}
	}
	return len(b) > 0
}

// digits parses a Content-Length of at most 9 digits.
func digits(b []byte) (int, bool) {
	if len(b) == 0 || len(b) > 9 {
		return 0, false
	}
	n := 0
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int(c-'0')
	}
	return n, true
}

// equalFold is ASCII case-insensitive equality of b and s.
func equalFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		c, d := b[i], s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != d {
			return false
		}
	}
	return true
}
