package config

import (
	"fmt"
	"math"
	"net"
	"net/url"
	"strings"

	"github.com/spillway/spillway/proxy/cstr"
)

// UpstreamSentinel is the Sentinel part of a sentinel:// upstream URL: the
// sentinels to ask, the name of the master they monitor, and the
// credentials the sentinels themselves require (if any).
type UpstreamSentinel struct {
	Addrs    []string // host:port of each sentinel, in the URL's order
	Master   string
	Username string // sentinel-username (ACL user of the sentinels)
	Password string // sentinel-password (the sentinels' requirepass)
}

// sentinelSyntax is the shape a sentinel upstream URL must have.
const sentinelSyntax = "sentinel://[user:password@]host:port[,host:port...]/mastername[/db]" +
	"[?sentinel-username=U&sentinel-password=P]"

// parseSentinelUpstream parses a sentinel:// URL. The user and password
// before '@' are the master's (as with redis://); sentinels that require
// authentication get sentinel-username / sentinel-password from the query.
// A sentinel's port defaults to 26379, the db to 0.
func parseSentinelUpstream(s string) (Upstream, error) {
	bad := func(why string) (Upstream, error) {
		return Upstream{}, fmt.Errorf("argument must be a %s URL (%s)", sentinelSyntax, why)
	}
	rest := strings.TrimPrefix(s, "sentinel://")
	if i := strings.IndexByte(rest, '#'); i >= 0 {
		return bad("unexpected fragment")
	}
	var query string
	if i := strings.IndexByte(rest, '?'); i >= 0 {
		rest, query = rest[:i], rest[i+1:]
	}
	hosts, path, _ := strings.Cut(rest, "/")
	var up Upstream
	if i := strings.LastIndexByte(hosts, '@'); i >= 0 {
		info := hosts[:i]
		hosts = hosts[i+1:]
		user, pass, hasPass := strings.Cut(info, ":")
		var err1, err2 error
		if up.Username, err1 = url.PathUnescape(user); hasPass {
			up.Password, err2 = url.PathUnescape(pass)
		}
		if err1 != nil || err2 != nil {
			return bad("malformed user or password")
		}
	}
	sen := &UpstreamSentinel{}
	for _, h := range strings.Split(hosts, ",") {
		if h == "" {
			return bad("missing sentinel host")
		}
		host, port, err := net.SplitHostPort(h)
		if err != nil {
			// No port: a plain name or a bracketed IPv6 address.
			bracketed := strings.HasPrefix(h, "[") && strings.HasSuffix(h, "]")
			if !bracketed && strings.ContainsAny(h, ":[]") {
				return bad("bad sentinel address " + h)
			}
			host, port = strings.Trim(h, "[]"), "26379"
		}
		if p, ok := cstr.ParseInt(port); !ok || p < 1 || p > 65535 {
			return bad("bad port")
		}
		if host == "" {
			return bad("missing sentinel host")
		}
		sen.Addrs = append(sen.Addrs, joinHostPort(host, port))
	}
	name, db, hasDB := strings.Cut(path, "/")
	name, err := url.PathUnescape(name)
	if err != nil || name == "" {
		return bad("missing master name")
	}
	sen.Master = name
	if hasDB {
		n, ok := cstr.ParseInt(db)
		if !ok || n < 0 || n > math.MaxInt32 {
			return bad("bad db number")
		}
		up.DB = int(n)
	}
	q, err := url.ParseQuery(query)
	if err != nil {
		return bad("malformed query")
	}
	for k, v := range q {
		switch k {
		case "sentinel-username":
			sen.Username = v[len(v)-1]
		case "sentinel-password":
			sen.Password = v[len(v)-1]
		default:
			return bad("unknown parameter " + k)
		}
	}
	up.Sentinel = sen
	return up, nil
}
