package mysqlstore

import (
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
)

func TestParseURL(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		url, want string // want: the DSN, or a piece of the error
		ok        bool
	}{
		{"mysql://xjob:pw@db.example:3307/xjob", "xjob:pw@tcp(db.example:3307)/xjob", true},
		{"mysql://xjob:pw@db.example/xjob", "xjob:pw@tcp(db.example:3306)/xjob", true},
		{"mariadb://xjob:p%40ss%3Aw%2Frd@10.0.0.1:3306/xjob", "xjob:p@ss:w/rd@tcp(10.0.0.1:3306)/xjob", true},
		{"mysql://xjob@[::1]:3306/xjob", "xjob@tcp([::1]:3306)/xjob", true},
		{"mysql://xjob:pw@db:3306/xjob?tls=true", "xjob:pw@tcp(db:3306)/xjob?tls=true", true},
		{"mysql://xjob:pw@/xjob?socket=/run/mysqld/mysqld.sock", "xjob:pw@unix(/run/mysqld/mysqld.sock)/xjob", true},
		{"postgres://xjob:pw@db/xjob", "want mysql://", false},
		{"xjob:pw@tcp(db:3306)/xjob", "want mysql://", false},
		{"mysql://xjob:pw@db:3306/", "names no database", false},
		{"mysql://:pw@db:3306/xjob", "names no user", false},
		{"mysql://xjob:pw@:3306/xjob", "names no host", false},
		{"mysql://xjob:pw@db:/xjob", "empty port", false},
		{"mysql://xjob:pw@db:3306/xjob?tls=true&tls=false", "given 2 times", false},
		{"mysql://xjob:pw%zz@db:3306/xjob", "malformed", false},
		{"mysql://xjob:pw@db:3306/xjob?parseTime=maybe", "invalid", false},
	} {
		dsn, err := ParseURL(c.url)
		switch {
		case c.ok && (err != nil || dsn != c.want):
			t.Errorf("ParseURL(%q) = %q, %v; want %q", c.url, dsn, err, c.want)
		case !c.ok && (err == nil || !strings.Contains(err.Error(), c.want)):
			t.Errorf("ParseURL(%q) = %q, %v; want an error saying %q", c.url, dsn, err, c.want)
		case !c.ok && strings.Contains(err.Error(), "pw"):
			t.Errorf("ParseURL(%q) error carries the password: %v", c.url, err)
		}
	}
}

// FuzzParseURL: ParseURL never panics, never quotes a password in an
// error, and a DSN it returns parses back to the URL's parts.
func FuzzParseURL(f *testing.F) {
	for _, s := range []string{
		"mysql://xjob:pw@db.example:3307/xjob",
		"mariadb://u:p%40ss@10.0.0.1/x?tls=skip-verify",
		"mysql://u:pw@/x?socket=/tmp/m.sock",
		"mysql://u:pw@[::1]:3306/x",
		"mysql://u:@h/x?a=b&c=d",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, u string) {
		dsn, err := ParseURL(u)
		if err != nil {
			if _, rest, ok := strings.Cut(u, "://"); ok {
				if userinfo, _, ok := strings.Cut(rest, "@"); ok {
					if _, pass, ok := strings.Cut(userinfo, ":"); ok && len(pass) >= 4 && strings.Contains(err.Error(), pass) {
						t.Fatalf("error %q quotes the password %q", err, pass)
					}
				}
			}
			return
		}
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			t.Fatalf("ParseURL(%q) = %q, which does not parse: %v", u, dsn, err)
		}
		if cfg.User == "" || cfg.DBName == "" || cfg.Addr == "" {
			t.Fatalf("ParseURL(%q) = %q: user %q db %q addr %q", u, dsn, cfg.User, cfg.DBName, cfg.Addr)
		}
	})
}
