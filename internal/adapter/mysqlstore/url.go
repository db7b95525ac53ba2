package mysqlstore

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// ParseURL turns a database URL into a go-sql-driver DSN:
//
//	mysql://user:pass@host:port/db?param=value   → user:pass@tcp(host:port)/db?param=value
//	mysql://user:pass@host/db                     → port 3306
//	mysql://user:pass@/db?socket=/run/mysqld/mysqld.sock → unix socket
//
// The scheme may be mysql or mariadb; user, password and database are
// percent-decoded; other query parameters pass through as go-sql-driver
// parameters (tls=true, …). Its errors never quote the URL: it holds the
// password.
func ParseURL(u string) (dsn string, err error) {
	scheme, _, ok := strings.Cut(u, "://")
	if !ok {
		return "", errors.New("mysqlstore: database URL: want mysql://user:password@host:port/database")
	}
	switch strings.ToLower(scheme) {
	case "mysql", "mariadb":
	default:
		return "", errors.New("mysqlstore: database URL: unsupported scheme: want mysql:// or mariadb://")
	}
	p, err := url.Parse(u)
	if err != nil {
		return "", errors.New("mysqlstore: database URL is malformed (check that special characters of the password are percent-encoded)")
	}
	if p.Opaque != "" || p.Fragment != "" {
		return "", errors.New("mysqlstore: database URL: want mysql://user:password@host:port/database")
	}
	cfg := mysql.NewConfig()
	if p.User != nil {
		cfg.User = p.User.Username()
		cfg.Passwd, _ = p.User.Password()
	}
	if cfg.User == "" {
		return "", errors.New("mysqlstore: database URL names no user")
	}
	cfg.DBName = strings.TrimPrefix(p.Path, "/")
	if cfg.DBName == "" || strings.Contains(cfg.DBName, "/") {
		return "", errors.New("mysqlstore: database URL names no database (mysql://user:password@host:port/DATABASE)")
	}
	q := p.Query()
	if sock := q.Get("socket"); sock != "" {
		if p.Host != "" {
			return "", errors.New("mysqlstore: database URL: a socket and a host both given")
		}
		cfg.Net, cfg.Addr = "unix", sock
		q.Del("socket")
	} else {
		host, port := p.Hostname(), p.Port()
		if host == "" {
			return "", errors.New("mysqlstore: database URL names no host")
		}
		if port == "" {
			port = "3306"
		}
		if strings.HasSuffix(p.Host, ":") {
			return "", errors.New("mysqlstore: database URL: empty port")
		}
		cfg.Net, cfg.Addr = "tcp", net.JoinHostPort(host, port)
	}
	for k, vs := range q {
		if len(vs) != 1 {
			return "", fmt.Errorf("mysqlstore: database URL: parameter %q given %d times", k, len(vs))
		}
		if cfg.Params == nil {
			cfg.Params = map[string]string{}
		}
		cfg.Params[k] = vs[0]
	}
	dsn = cfg.FormatDSN()
	// FormatDSN writes Params back as text; parse it once so that an
	// invalid parameter value is reported here, without the password.
	if _, err := mysql.ParseDSN(dsn); err != nil {
		return "", fmt.Errorf("mysqlstore: database URL: %w", redact(err, dsn))
	}
	return dsn, nil
}
