package protocol

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
)

// callbackList is xxl-job 3.5's callback body: the item array wrapped in
// an object.
type callbackList struct {
	CallbackList *[]HandleCallbackParam `json:"callbackList"`
}

// DecodeCallbacks reads the body of POST /api/callback as any executor
// generation sends it: a JSON array of items (2.x – 3.4) or
// {"callbackList":[…]} (3.5). Each item comes back in the 2.3 – 3.4 shape:
// HandleCode and HandleMsg taken from a 2.2 executeResult when the item has
// no handleCode, and LogDateTim from 3.5's logDateTime when it has no
// logDateTim.
func DecodeCallbacks(body []byte) ([]HandleCallbackParam, error) {
	var items []HandleCallbackParam
	switch b := bytes.TrimLeft(body, " \t\r\n"); {
	case len(b) > 0 && b[0] == '[':
		// The plain body most executors send is read by hand (plain.go).
		if plain, ok := decodePlainCallbacks(b); ok {
			items = plain
		} else if err := json.Unmarshal(b, &items); err != nil {
			return nil, fmt.Errorf("callback array: %w", err)
		}
	case len(b) > 0 && b[0] == '{':
		var l callbackList
		if err := json.Unmarshal(b, &l); err != nil {
			return nil, fmt.Errorf("callback object: %w", err)
		}
		if l.CallbackList == nil {
			return nil, errors.New("callback object: no callbackList")
		}
		items = *l.CallbackList
	default:
		return nil, errors.New("callback body: want a JSON array or an object with callbackList")
	}
	for i := range items {
		items[i] = items[i].normalized()
	}
	return items, nil
}

func (p HandleCallbackParam) normalized() HandleCallbackParam {
	if p.HandleCode == 0 && p.ExecuteResult != nil {
		p.HandleCode, p.HandleMsg = p.ExecuteResult.Code, p.ExecuteResult.Msg
	}
	if p.LogDateTim == 0 {
		p.LogDateTim = p.LogDateTime
	}
	p.LogDateTime, p.ExecuteResult = 0, nil
	return p
}

type appNameKey struct{}

// WithAppName returns ctx carrying the appname of the executor group a call
// is for; the executor client sends it as AppNameHeader, which xxl-job 3.5
// executors require and older ones ignore. Dispatch and the admin's log
// and kill calls set it; the route probes inherit it from dispatch.
func WithAppName(ctx context.Context, appName string) context.Context {
	if appName == "" {
		return ctx
	}
	return context.WithValue(ctx, appNameKey{}, appName)
}

// AppNameFromContext returns the appname WithAppName put in ctx, or "".
func AppNameFromContext(ctx context.Context) string {
	s, _ := ctx.Value(appNameKey{}).(string)
	return s
}
