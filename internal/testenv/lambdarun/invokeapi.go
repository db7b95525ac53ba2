package lambdarun

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"
)

// invokePrefix is the Lambda Invoke API's path prefix.
const invokePrefix = "/2015-03-31/functions/"

// InvokeAPI serves the Lambda service's Invoke API (version 2015-03-31)
// for functions run here, so that a caller using aws-sdk-go-v2's Lambda
// client (BaseEndpoint pointed at it) invokes a real bootstrap:
//
//	POST /2015-03-31/functions/{name or ARN}/invocations
//	  X-Amz-Invocation-Type RequestResponse (default) → 200, the response;
//	      a handler error → 200, X-Amz-Function-Error: Unhandled, the error
//	  X-Amz-Invocation-Type Event → 202 at once; the invocation runs after
//	  unknown function → 404 ResourceNotFoundException
//
// A function is found by its name or by an ARN ending in ":function:name".
// Requests are not signature-checked (the emulators' practice).
type InvokeAPI struct {
	// Functions by name.
	Functions map[string]*Function
	// Timeout is each invocation's (default 10 s).
	Timeout time.Duration

	wg sync.WaitGroup
}

// ServeHTTP serves one Invoke call.
func (a *InvokeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	name, ok := InvokedFunction(w, r)
	if !ok {
		return
	}
	f := a.Functions[name]
	if f == nil {
		InvokeError(w, http.StatusNotFound, "ResourceNotFoundException", "Function not found: "+name)
		return
	}
	payload, err := io.ReadAll(io.LimitReader(r.Body, 6<<20))
	if err != nil {
		InvokeError(w, http.StatusBadRequest, "InvalidRequestContentException", err.Error())
		return
	}
	timeout := a.Timeout
	if timeout <= 0 {
		timeout = 10 * time.Second
	}
	switch r.Header.Get("X-Amz-Invocation-Type") {
	case "", "RequestResponse":
	case "Event":
		a.wg.Add(1)
		go func() {
			defer a.wg.Done()
			_, _ = f.Invoke(context.Background(), payload, timeout)
		}()
		w.WriteHeader(http.StatusAccepted)
		return
	default:
		InvokeError(w, http.StatusBadRequest, "InvalidParameterValueException", "unsupported invocation type")
		return
	}
	out, err := f.Invoke(r.Context(), payload, timeout)
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amz-Executed-Version", "$LATEST")
	if err != nil {
		e, ok := err.(*Error)
		if !ok {
			e = &Error{Type: "ServiceException", Message: err.Error()}
		}
		out, _ = json.Marshal(e)
		w.Header().Set("X-Amz-Function-Error", "Unhandled")
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(out)
}

// Wait returns once every Event invocation accepted so far has ended.
func (a *InvokeAPI) Wait() { a.wg.Wait() }

// InvokedFunction reads the function an Invoke call names (its name, or
// an ARN ending in ":function:name") from the request's path. Any other
// request is answered with UnknownOperationException and ok is false.
// Shared by InvokeAPI and the emulated deployment's asynchronous lanes.
func InvokedFunction(w http.ResponseWriter, r *http.Request) (name string, ok bool) {
	rest, ok1 := strings.CutPrefix(r.URL.EscapedPath(), invokePrefix)
	name, ok2 := strings.CutSuffix(rest, "/invocations")
	if !ok1 || !ok2 || r.Method != http.MethodPost {
		InvokeError(w, http.StatusNotFound, "UnknownOperationException", "unknown operation "+r.Method+" "+r.URL.Path)
		return "", false
	}
	name, _ = url.PathUnescape(name)
	if i := strings.LastIndex(name, ":function:"); i >= 0 {
		name = name[i+len(":function:"):]
	}
	return name, true
}

// InvokeError writes an error as the Lambda service's REST-JSON protocol
// does: the type in X-Amzn-ErrorType, the message in the body.
func InvokeError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Amzn-ErrorType", typ)
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]string{"Type": "User", "message": msg})
	_, _ = w.Write(b)
}
