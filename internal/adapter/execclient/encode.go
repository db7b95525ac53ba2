package execclient

import (
	"strconv"
	"unicode/utf8"

	"github.com/xjobdev/xjob/pkg/protocol"
)

// A /run body a trigger.
//
// encoding/json reflects over TriggerParam's twelve fields for every
// trigger, about a sixth of a /run call's CPU in local mode's steady
// profile. appendTriggerParam writes the same bytes by hand:
// FuzzTriggerParamJSON holds it to json.Marshal's output for any field
// values. Client.Run appends it into a pooled buffer (bodies).

// appendTriggerParam appends p as json.Marshal encodes it.
func appendTriggerParam(b []byte, p protocol.TriggerParam) []byte {
	b = append(b, `{"jobId":`...)
	b = strconv.AppendInt(b, p.JobID, 10)
	b = append(b, `,"executorHandler":`...)
	b = appendJSONString(b, p.ExecutorHandler)
	b = append(b, `,"executorParams":`...)
	b = appendJSONString(b, p.ExecutorParams)
	b = append(b, `,"executorBlockStrategy":`...)
	b = appendJSONString(b, p.ExecutorBlockStrategy)
	b = append(b, `,"executorTimeout":`...)
	b = strconv.AppendInt(b, int64(p.ExecutorTimeout), 10)
	b = append(b, `,"logId":`...)
	b = strconv.AppendInt(b, p.LogID, 10)
	b = append(b, `,"logDateTime":`...)
	b = strconv.AppendInt(b, p.LogDateTime, 10)
	b = append(b, `,"glueType":`...)
	b = appendJSONString(b, p.GlueType)
	b = append(b, `,"glueSource":`...)
	b = appendJSONString(b, p.GlueSource)
	b = append(b, `,"glueUpdatetime":`...)
	b = strconv.AppendInt(b, p.GlueUpdatetime, 10)
	b = append(b, `,"broadcastIndex":`...)
	b = strconv.AppendInt(b, int64(p.BroadcastIndex), 10)
	b = append(b, `,"broadcastTotal":`...)
	b = strconv.AppendInt(b, int64(p.BroadcastTotal), 10)
	return append(b, '}')
}

// appendJSONString appends s as encoding/json writes a string: HTML
// characters and U+2028/U+2029 escaped, invalid UTF-8 as U+FFFD.
func appendJSONString(b []byte, s string) []byte {
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
