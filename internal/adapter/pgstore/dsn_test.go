package pgstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/xjobdev/xjob/internal/testenv/pgserver"
)

// No error of Open carries the DSN's password, however the DSN is
// written and whatever fails: a wrong password, a DSN pgx cannot parse,
// a server that does not answer.
func TestOpenErrorsHideThePassword(t *testing.T) {
	t.Parallel()
	srv := pgserver.Shared(t)
	const secret = "Pa55-w0rd:with@odd/chars'"
	good := newDatabase(t)
	wrong := strings.Replace(good, srv.Password, "wr0ng-"+srv.Password[:6], 1)
	silent := silentServer(t)
	for _, tc := range []struct {
		name    string
		dsn     string
		secrets []string
		says    string // part of the error's text
	}{
		{"wrong password, URL", wrong, []string{"wr0ng-" + srv.Password[:6], srv.Password}, "password authentication failed"},
		{"wrong password, key=value",
			fmt.Sprintf("host=127.0.0.1 port=%d user=%s password='%s' dbname=postgres sslmode=disable", srv.Port, pgserver.Role,
				strings.ReplaceAll(secret, "'", `\'`)),
			[]string{secret, strings.ReplaceAll(secret, "'", `\'`)}, "password authentication failed"},
		{"password in the query", fmt.Sprintf("postgres://%s@127.0.0.1:%d/postgres?sslmode=disable&password=%s",
			pgserver.Role, srv.Port, "qu3ry-s3cret"), []string{"qu3ry-s3cret"}, "password authentication failed"},
		{"unparsable URL", "postgres://xjob:s3cret-unparsed@127.0.0.1:notaport/db", []string{"s3cret-unparsed"}, "pgstore open"},
		{"unparsable key=value", "host=127.0.0.1 password=kv-s3cret port=bad", []string{"kv-s3cret"}, "pgstore open"},
		{"server does not answer", fmt.Sprintf("postgres://xjob:silent-s3cret@%s/db?sslmode=disable", silent),
			[]string{"silent-s3cret"}, "cannot connect to PostgreSQL"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			start := time.Now()
			db, err := Open(context.Background(), tc.dsn, Options{ConnectTimeout: time.Second})
			if err == nil {
				_ = db.Close()
				t.Fatal("open succeeded")
			}
			t.Logf("error: %v", err)
			if took := time.Since(start); took > 15*time.Second {
				t.Errorf("open failed after %v; the connect timeout is 1 s", took)
			}
			msg := fmt.Sprintf("%v | %+v | %#v", err, err, err)
			for _, s := range tc.secrets {
				if strings.Contains(msg, s) {
					t.Fatalf("the error shows the password %q: %s", s, msg)
				}
			}
			if !strings.Contains(err.Error(), tc.says) {
				t.Fatalf("error %q does not say %q", err, tc.says)
			}
			if strings.Count(err.Error(), "\n") > 1 {
				t.Errorf("error spans lines: %q", err)
			}
		})
	}
	t.Run("connection errors keep their cause", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		_, err := Open(ctx, wrong, Options{})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("open with a cancelled context: %v, want context.Canceled", err)
		}
	})
}

// silentServer accepts TCP connections and never answers: a server that
// is up to the network and down to PostgreSQL.
func silentServer(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c)
		}
	}()
	t.Cleanup(func() {
		_ = l.Close()
		<-done
		for _, c := range conns {
			_ = c.Close()
		}
	})
	return l.Addr().String()
}

func TestRedactorFindsEveryForm(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		dsn, secret string
	}{
		{"postgres://u:p%40ss@h/db", "p@ss"},
		{"postgres://u:p%40ss@h/db", "p%40ss"},
		{"host=h password=plain user=u", "plain"},
		{"host=h password = 'quo ted' user=u", "quo ted"},
		{"postgres://u@h/db?password=inquery", "inquery"},
		{"postgres://u:broken@h:port/db", "broken"},
	} {
		r := newRedactor(tc.dsn)
		err := r.clean(errors.New("cannot use " + tc.dsn + " or " + tc.secret))
		if strings.Contains(err.Error(), tc.secret) {
			t.Errorf("%s: %q still holds %q", tc.dsn, err, tc.secret)
		}
	}
}
