package config

import (
	"errors"
	"fmt"
	"math"
	"net/url"
	"strconv"
	"strings"

	"github.com/spillway/spillway/proxy/cstr"
)

// Reasons, worded as Redis 7.0 words them.
var (
	errNotInteger  = errors.New("argument couldn't be parsed into an integer")
	errNotMemory   = errors.New("argument must be a memory value")
	errNotBool     = errors.New("argument must be 'yes' or 'no'")
	errWrongArgs   = errors.New("wrong number of arguments")
	errSave        = errors.New("Invalid save parameters")
	errTooManyBind = errors.New("Too many bind addresses specified.")
	errDefrag      = errors.New("Active defragmentation cannot be enabled: it requires a Redis server " +
		"compiled with a modified Jemalloc like the one shipped by default with the Redis source distribution")
	errNotify         = errors.New("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.")
	errDBFilenamePath = errors.New("dbfilename can't be a path, just a filename")
	errEmptyDir       = errors.New("dir can't be empty")
)

func errRange(lo, hi string) error {
	return fmt.Errorf("argument must be between %s and %s inclusive", lo, hi)
}

// ParseMemory parses a memory size as Redis's memtoull does: decimal digits
// followed by an optional unit b, k (1000), kb (1024), m (1000²), mb (1024²),
// g (1000³) or gb (1024³), case-insensitive. No sign, blanks or fractions.
// As in Redis, an empty number counts as 0, too many digits saturate, and
// the multiplication wraps around 2⁶⁴.
func ParseMemory(s string) (uint64, bool) {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	var mul uint64
	switch u := s[i:]; {
	case u == "" || strings.EqualFold(u, "b"):
		mul = 1
	case strings.EqualFold(u, "k"):
		mul = 1000
	case strings.EqualFold(u, "kb"):
		mul = 1024
	case strings.EqualFold(u, "m"):
		mul = 1000 * 1000
	case strings.EqualFold(u, "mb"):
		mul = 1024 * 1024
	case strings.EqualFold(u, "g"):
		mul = 1000 * 1000 * 1000
	case strings.EqualFold(u, "gb"):
		mul = 1024 * 1024 * 1024
	default:
		return 0, false
	}
	if i >= 128 { // Redis copies the digits into a 128-byte buffer.
		return 0, false
	}
	var v uint64
	for j := 0; j < i; j++ {
		c := uint64(s[j] - '0')
		if v > (math.MaxUint64-c)/10 {
			v = math.MaxUint64 // strtoull saturates
			break
		}
		v = v*10 + c
	}
	return v * mul, true
}

// FormatMemory renders n the way CONFIG REWRITE writes memory settings:
// with the largest binary unit (gb, mb, kb) that divides it exactly.
func FormatMemory(n uint64) string {
	switch {
	case n == 0:
		return "0"
	case n%(1<<30) == 0:
		return strconv.FormatUint(n>>30, 10) + "gb"
	case n%(1<<20) == 0:
		return strconv.FormatUint(n>>20, 10) + "mb"
	case n%(1<<10) == 0:
		return strconv.FormatUint(n>>10, 10) + "kb"
	}
	return strconv.FormatUint(n, 10)
}

// Keyspace notification classes, in the order Redis prints them.
const (
	notifyKeyspace = 1 << iota // K
	notifyKeyevent             // E
	notifyGeneric              // g
	notifyString               // $
	notifyList                 // l
	notifySet                  // s
	notifyHash                 // h
	notifyZset                 // z
	notifyExpired              // x
	notifyEvicted              // e
	notifyStream               // t
	notifyKeyMiss              // m
	notifyLoaded               // (module only, never in the string)
	notifyModule               // d
	notifyNew                  // n

	notifyAll = notifyGeneric | notifyString | notifyList | notifySet | notifyHash |
		notifyZset | notifyExpired | notifyEvicted | notifyStream | notifyModule
)

var notifyClasses = []struct {
	c    byte
	flag int
}{
	{'g', notifyGeneric}, {'$', notifyString}, {'l', notifyList}, {'s', notifySet},
	{'h', notifyHash}, {'z', notifyZset}, {'x', notifyExpired}, {'e', notifyEvicted},
	{'t', notifyStream}, {'d', notifyModule}, {'n', notifyNew},
}

// canonicalNotify parses notify-keyspace-events classes and returns them in
// Redis's canonical form (e.g. "KEA" -> "AKE").
func canonicalNotify(s string) (string, error) {
	flags := 0
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case 'A':
			flags |= notifyAll
		case 'K':
			flags |= notifyKeyspace
		case 'E':
			flags |= notifyKeyevent
		case 'm':
			flags |= notifyKeyMiss
		default:
			found := false
			for _, nc := range notifyClasses {
				if nc.c == c {
					flags |= nc.flag
					found = true
					break
				}
			}
			if !found {
				return "", errNotify
			}
		}
	}
	var b []byte
	if flags&notifyAll == notifyAll {
		b = append(b, 'A')
	} else {
		for _, nc := range notifyClasses {
			if flags&nc.flag != 0 {
				b = append(b, nc.c)
			}
		}
	}
	if flags&notifyKeyspace != 0 {
		b = append(b, 'K')
	}
	if flags&notifyKeyevent != 0 {
		b = append(b, 'E')
	}
	if flags&notifyKeyMiss != 0 {
		b = append(b, 'm')
	}
	return string(b), nil
}

// parseSave validates save parameters: pairs of seconds (>= 1) and changes
// (>= 0). No arguments, or one empty argument, means no snapshots.
func parseSave(args []string) ([]string, error) {
	if len(args) == 0 || (len(args) == 1 && args[0] == "") {
		return nil, nil
	}
	if len(args)%2 != 0 {
		return nil, errSave
	}
	out := make([]string, len(args))
	for i, a := range args {
		v, err := strconv.ParseInt(a, 10, 64)
		if err != nil || (i%2 == 0 && v < 1) || (i%2 == 1 && v < 0) {
			return nil, errSave
		}
		out[i] = strconv.FormatInt(v, 10)
	}
	return out, nil
}

// maxBindAddrs is Redis's CONFIG_BINDADDR_MAX.
const maxBindAddrs = 16

func parseBind(args []string) ([]string, error) {
	if len(args) == 0 {
		return nil, errWrongArgs
	}
	if len(args) > maxBindAddrs {
		return nil, errTooManyBind
	}
	for _, a := range args {
		if a == "" {
			return nil, errors.New("bind address can't be empty")
		}
	}
	return append([]string(nil), args...), nil
}

// Upstream is a parsed upstream URL.
type Upstream struct {
	Addr     string // host:port
	Username string // empty: none (or "default" when only a password is given)
	Password string
	DB       int
}

// upstreamSyntax is the shape an upstream URL must have.
const upstreamSyntax = "redis://[user:password@]host:port[/db]"

// ParseUpstream validates and parses a redis://[user:password@]host:port[/db]
// URL. The port defaults to 6379 and the db to 0.
func ParseUpstream(s string) (Upstream, error) {
	bad := func(why string) (Upstream, error) {
		return Upstream{}, fmt.Errorf("argument must be a %s URL (%s)", upstreamSyntax, why)
	}
	u, err := url.Parse(s)
	if err != nil {
		return bad("malformed")
	}
	if u.Scheme != "redis" {
		return bad("scheme must be redis")
	}
	if u.Opaque != "" || u.Host == "" {
		return bad("missing host")
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return bad("unexpected query or fragment")
	}
	host, port := u.Hostname(), u.Port()
	if host == "" {
		return bad("missing host")
	}
	if port == "" {
		if strings.HasSuffix(u.Host, ":") {
			return bad("empty port")
		}
		port = "6379"
	}
	if p, ok := cstr.ParseInt(port); !ok || p < 1 || p > 65535 {
		return bad("bad port")
	}
	up := Upstream{Addr: joinHostPort(host, port)}
	if u.User != nil {
		up.Username = u.User.Username()
		up.Password, _ = u.User.Password()
	}
	switch path := strings.TrimPrefix(u.Path, "/"); {
	case path == "":
	default:
		db, ok := cstr.ParseInt(path)
		if !ok || db < 0 || db > math.MaxInt32 {
			return bad("bad db number")
		}
		up.DB = int(db)
	}
	return up, nil
}

func joinHostPort(host, port string) string {
	if strings.IndexByte(host, ':') >= 0 {
		return "[" + host + "]:" + port
	}
	return host + ":" + port
}
