package executorapi

// A fast path for the callback body's key check.
//
// strictjson.Check walks a body with encoding/json's tokenizer, a token
// and an allocation at a time: 2 % of xjob's CPU in local mode's steady
// profile, for bodies that are almost always the same flat shape. The
// body an executor sends is an array of flat objects whose keys are
// HandleCallbackParam's own, each once, with string, integer, true,
// false or null values. plainCallbacks recognises exactly that and
// nothing more: whatever else it meets (the {"callbackList":…} form,
// executeResult, an unknown key, an escaped key, a fraction or exponent,
// a long number, bad syntax) sends the body to strictjson.Check, which
// judges it as before. FuzzPlainCallbacks holds it to Check: no body it
// accepts is one Check refuses.

// callbackKeys are HandleCallbackParam's flat keys, each with its bit.
var callbackKeys = map[string]uint8{
	"logId": 1, "logDateTim": 2, "handleCode": 4, "handleMsg": 8, "logDateTime": 16,
}

// maxPlainDigits bounds an integer's digits, far inside float64's range.
const maxPlainDigits = 19

// plainCallbacks reports whether body is a JSON array of flat objects
// whose keys are callbackKeys, none repeated in its object, with plain
// values, and nothing after it but white space.
func plainCallbacks(body []byte) bool {
	i := skipSpace(body, 0)
	if i >= len(body) || body[i] != '[' {
		return false
	}
	i = skipSpace(body, i+1)
	if i < len(body) && body[i] == ']' {
		return skipSpace(body, i+1) == len(body)
	}
	for {
		if i = plainObject(body, i); i < 0 {
			return false
		}
		i = skipSpace(body, i)
		switch {
		case i >= len(body):
			return false
		case body[i] == ',':
			i = skipSpace(body, i+1)
		case body[i] == ']':
			return skipSpace(body, i+1) == len(body)
		default:
			return false
		}
	}
}

// plainObject scans the flat object at body[i] and returns the index
// after it, or -1 if it is not one plainCallbacks accepts.
func plainObject(body []byte, i int) int {
	if i >= len(body) || body[i] != '{' {
		return -1
	}
	i = skipSpace(body, i+1)
	if i < len(body) && body[i] == '}' {
		return i + 1
	}
	var seen uint8
	for {
		if i >= len(body) || body[i] != '"' {
			return -1
		}
		end := i + 1
		for end < len(body) && body[end] != '"' && body[end] != '\\' {
			end++
		}
		if end >= len(body) || body[end] != '"' {
			return -1 // unterminated or escaped: Check's to read
		}
		bit := callbackKeys[string(body[i+1:end])]
		if bit == 0 || seen&bit != 0 {
			return -1
		}
		seen |= bit
		i = skipSpace(body, end+1)
		if i >= len(body) || body[i] != ':' {
			return -1
		}
		if i = plainValue(body, skipSpace(body, i+1)); i < 0 {
			return -1
		}
		i = skipSpace(body, i)
		switch {
		case i >= len(body):
			return -1
		case body[i] == ',':
			i = skipSpace(body, i+1)
		case body[i] == '}':
			return i + 1
		default:
			return -1
		}
	}
}

// plainValue scans a string, an integer of at most maxPlainDigits digits,
// true, false or null at body[i] and returns the index after it, or -1.
func plainValue(body []byte, i int) int {
	if i >= len(body) {
		return -1
	}
	switch c := body[i]; {
	case c == '"':
		for i++; i < len(body); i++ {
			switch b := body[i]; {
			case b == '"':
				return i + 1
			case b < 0x20:
				return -1
			case b == '\\':
				if i++; i >= len(body) {
					return -1
				}
				switch body[i] {
				case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				case 'u':
					if i+4 >= len(body) {
						return -1
					}
					for _, h := range body[i+1 : i+5] {
						if !isHex(h) {
							return -1
						}
					}
					i += 4
				default:
					return -1
				}
			}
		}
		return -1
	case c == '-' || c >= '0' && c <= '9':
		if c == '-' {
			i++
		}
		start := i
		for i < len(body) && body[i] >= '0' && body[i] <= '9' {
			i++
		}
		n := i - start
		if n == 0 || n > maxPlainDigits || n > 1 && body[start] == '0' {
			return -1
		}
		if i < len(body) && (body[i] == '.' || body[i] == 'e' || body[i] == 'E') {
			return -1
		}
		return i
	}
	for _, lit := range []string{"true", "false", "null"} {
		if len(body)-i >= len(lit) && string(body[i:i+len(lit)]) == lit {
			return i + len(lit)
		}
	}
	return -1
}

func isHex(b byte) bool {
	return b >= '0' && b <= '9' || b >= 'a' && b <= 'f' || b >= 'A' && b <= 'F'
}

// skipSpace returns the index of the first byte at or after i that is
// not JSON white space.
func skipSpace(body []byte, i int) int {
	for i < len(body) && (body[i] == ' ' || body[i] == '\t' || body[i] == '\n' || body[i] == '\r') {
		i++
	}
	return i
}
