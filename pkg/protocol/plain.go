package protocol

import (
	"bytes"
	"strconv"
	"unicode/utf8"
)

// The callback body an executor of 2.3 – 3.4 sends, decoded by hand.
//
// Under steady 10,000 triggers a second the admin decodes as many
// callback items, and encoding/json's reflection over them was about
// 1.3 % of xjob local's CPU (and its own copies of every string). Most
// bodies are a plain array of flat items: decodePlainCallbacks reads those
// and declines anything else (a 3.5 callbackList, 2.2's executeResult,
// unknown or differently cased keys, escapes, fractions, long numbers),
// which encoding/json then reads as before. FuzzPlainCallbacksMatchJSON
// holds it to encoding/json: a body it accepts decodes to the same items.

// maxPlainIntDigits bounds an integer's digits so that it fits an int64
// (and an int on a 64-bit platform) without overflow checks.
const maxPlainIntDigits = 18

// decodePlainCallbacks decodes body when it is a JSON array of objects
// whose keys are exactly logId, logDateTim, logDateTime, handleCode and
// handleMsg, with integers and plain strings (no escape, valid UTF-8) or
// null as values, as json.Unmarshal into []HandleCallbackParam would;
// ok is false, and nothing decoded, for any other body.
func decodePlainCallbacks(body []byte) (items []HandleCallbackParam, ok bool) {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '[' {
		return nil, false
	}
	i = skipSpace(body, i+1)
	items = make([]HandleCallbackParam, 0, bytes.Count(body[i:], []byte{'{'}))
	if i < len(body) && body[i] == ']' {
		return items, skipSpace(body, i+1) == len(body)
	}
	for {
		var p HandleCallbackParam
		if i, ok = plainItem(body, i, &p); !ok {
			return nil, false
		}
		items = append(items, p)
		i = skipSpace(body, i)
		switch {
		case i >= len(body):
			return nil, false
		case body[i] == ',':
			i = skipSpace(body, i+1)
		case body[i] == ']':
			return items, skipSpace(body, i+1) == len(body)
		default:
			return nil, false
		}
	}
}

// plainItem decodes the flat object at body[i] into p and returns the
// index after it.
func plainItem(body []byte, i int, p *HandleCallbackParam) (int, bool) {
	if i >= len(body) || body[i] != '{' {
		return 0, false
	}
	i = skipSpace(body, i+1)
	if i < len(body) && body[i] == '}' {
		return i + 1, true
	}
	for {
		key, next, ok := plainString(body, i)
		if !ok {
			return 0, false
		}
		i = skipSpace(body, next)
		if i >= len(body) || body[i] != ':' {
			return 0, false
		}
		i = skipSpace(body, i+1)
		if null(body, i) {
			// null leaves a field as it is, as encoding/json does.
			i += len("null")
		} else {
			switch string(key) {
			case "logId":
				p.LogID, i, ok = plainInt(body, i)
			case "logDateTim":
				p.LogDateTim, i, ok = plainInt(body, i)
			case "logDateTime":
				p.LogDateTime, i, ok = plainInt(body, i)
			case "handleCode":
				var v int64
				v, i, ok = plainInt(body, i)
				p.HandleCode = int(v)
				ok = ok && int64(p.HandleCode) == v
			case "handleMsg":
				var s []byte
				s, i, ok = plainString(body, i)
				p.HandleMsg = string(s)
			default:
				return 0, false
			}
			if !ok {
				return 0, false
			}
		}
		i = skipSpace(body, i)
		switch {
		case i >= len(body):
			return 0, false
		case body[i] == ',':
			i = skipSpace(body, i+1)
		case body[i] == '}':
			return i + 1, true
		default:
			return 0, false
		}
	}
}

// plainString reads the string at body[i] when it has no escape and no
// control character and is valid UTF-8: its bytes, and the index after
// its closing quote.
func plainString(body []byte, i int) ([]byte, int, bool) {
	if i >= len(body) || body[i] != '"' {
		return nil, 0, false
	}
	end := i + 1
	for end < len(body) && body[end] != '"' && body[end] != '\\' && body[end] >= 0x20 {
		end++
	}
	if end >= len(body) || body[end] != '"' || !utf8.Valid(body[i+1:end]) {
		return nil, 0, false
	}
	return body[i+1 : end], end + 1, true
}

// plainInt reads the JSON integer at body[i] (no fraction, no exponent,
// at most maxPlainIntDigits digits) and returns it and the index after it.
func plainInt(body []byte, i int) (int64, int, bool) {
	start := i
	if i < len(body) && body[i] == '-' {
		i++
	}
	digits := i
	for i < len(body) && body[i] >= '0' && body[i] <= '9' {
		i++
	}
	n := i - digits
	switch {
	case n == 0 || n > maxPlainIntDigits:
		return 0, 0, false
	case n > 1 && body[digits] == '0':
		return 0, 0, false // a leading zero is not JSON
	case i < len(body) && (body[i] == '.' || body[i] == 'e' || body[i] == 'E'):
		return 0, 0, false
	}
	v, err := strconv.ParseInt(string(body[start:i]), 10, 64)
	return v, i, err == nil
}

// null reports whether the literal null starts at body[i].
func null(body []byte, i int) bool {
	return len(body)-i >= 4 && string(body[i:i+4]) == "null"
}

// skipSpace returns the index of the first byte at or after i that is not
// JSON white space.
func skipSpace(body []byte, i int) int {
	for i < len(body) && (body[i] == ' ' || body[i] == '\t' || body[i] == '\n' || body[i] == '\r') {
		i++
	}
	return i
}
