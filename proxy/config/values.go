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
	errNotOctal       = errors.New("argument couldn't be parsed as an octal number")

	errNotMemoryOrPercent = errors.New("argument must be a memory or percent value")
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

// parseSave validates save parameters as Redis does: pairs of seconds
// (>= 1) and changes (>= 0), each parsed as strtoll to its end. No
// arguments, or one empty argument, means no snapshots.
func parseSave(args []string) ([]string, string, error) {
	if len(args) == 1 && args[0] == "" {
		args = nil
	}
	if len(args)%2 != 0 {
		return nil, "", errSave
	}
	out := make([]string, len(args))
	for i, a := range args {
		v, n, _ := cstr.Strtoll(a, 10)
		if n != len(a) || (i%2 == 0 && v < 1) || (i%2 == 1 && v < 0) {
			return nil, "", errSave
		}
		if i%2 == 1 {
			v = int64(int32(v)) // changes are a C int
		}
		out[i] = strconv.FormatInt(v, 10)
	}
	return out, strings.Join(out, " "), nil
}

// maxBindAddrs is Redis's CONFIG_BINDADDR_MAX.
const maxBindAddrs = 16

// parseBind takes up to 16 addresses; one empty argument (or none) means
// no address at all. Whether an address can be bound is found when
// listening.
func parseBind(args []string) ([]string, string, error) {
	if len(args) > maxBindAddrs {
		return nil, "", errTooManyBind
	}
	if len(args) == 1 && args[0] == "" {
		args = nil
	}
	list := append([]string{}, args...)
	return list, strings.Join(list, " "), nil
}

// parseReplicaOf takes `<host> <port>` (the master this server
// replicates when it starts) or `no one`.
func parseReplicaOf(args []string) ([]string, string, error) {
	if len(args) != 2 {
		return nil, "", errWrongArgs
	}
	if strings.EqualFold(args[0], "no") && strings.EqualFold(args[1], "one") {
		return nil, "", nil
	}
	if p, n, _ := cstr.Strtoll(args[1], 10); n != len(args[1]) || p < 0 || p > 65535 {
		return nil, "", errors.New("Invalid master port")
	}
	return []string{args[0], args[1]}, args[0] + " " + args[1], nil
}

// parseOOMValues takes three oom_score_adj values between -2000 and 2000.
func parseOOMValues(args []string) ([]string, string, error) {
	if len(args) != 3 {
		return nil, "", errWrongArgs
	}
	out := make([]string, 3)
	for i, a := range args {
		v, n, _ := cstr.Strtoll(a, 10)
		if n != len(a) || v < -2000 || v > 2000 {
			return nil, "", errors.New("Invalid oom-score-adj-values, elements must be between -2000 and 2000.")
		}
		out[i] = strconv.FormatInt(v, 10)
	}
	return out, strings.Join(out, " "), nil
}

// parsePercentiles takes latency-tracking-info-percentiles: numbers
// (string2d) between 0 and 100, shown as %f without trailing zeros.
func parsePercentiles(args []string) ([]string, string, error) {
	if len(args) == 1 && args[0] == "" {
		args = nil
	}
	out := make([]string, len(args))
	for i, a := range args {
		f, ok := cstr.ParseFloat(a)
		if !ok {
			return nil, "", errors.New("Invalid latency-tracking-info-percentiles parameters")
		}
		if f > 100 || f < 0 {
			return nil, "", errors.New("latency-tracking-info-percentiles parameters should sit between [0.0,100.0]")
		}
		t := strconv.FormatFloat(f, 'f', 6, 64)
		t = strings.TrimRight(strings.TrimRight(t, "0"), ".")
		out[i] = t
	}
	return out, strings.Join(out, " "), nil
}

// checkOOMAdj folds oom-score-adj's "relative" into "yes", its synonym,
// which CONFIG GET reports.
func checkOOMAdj(v *value) error {
	if v.text == "relative" {
		v.n, v.text = 1, "yes"
	}
	return nil
}

// checkShutdownFlags refuses shutdown-on-sig* holding both save (bit 0)
// and nosave (bit 1).
func checkShutdownFlags(v *value) error {
	if v.n&3 == 3 {
		return errors.New("shutdown options SAVE and NOSAVE can't be used simultaneously")
	}
	return nil
}

func checkAOFFilename(v *value) error {
	switch {
	case v.s == "":
		return errors.New("appendfilename can't be empty")
	case strings.ContainsRune(v.s, '/'):
		return errors.New("appendfilename can't be a path, just a filename")
	}
	return nil
}

func checkAOFDirname(v *value) error {
	switch {
	case v.s == "":
		return errors.New("appenddirname can't be empty")
	case strings.ContainsRune(v.s, '/'):
		return errors.New("appenddirname can't be a path, just a dirname")
	}
	return nil
}

// checkHostname is Redis's cluster-announce-hostname check: fewer than
// 256 bytes of letters, digits, hyphens and dots.
func checkHostname(v *value) error {
	if len(v.s) >= 256 {
		return errors.New("Hostnames must be less than 256 characters")
	}
	for i := 0; i < len(v.s); i++ {
		c := v.s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return errors.New("Hostnames may only contain alphanumeric characters, hyphens or dots")
		}
	}
	return nil
}

// procTitleVars are the variables proc-title-template may use; the value
// is whether the variable can expand to something other than blanks.
var procTitleVars = map[string]bool{
	"title": false, "listen-addr": true, "server-mode": false, "config-file": true,
	"port": true, "tls-port": true, "unixsocket": false,
}

// checkProcTitle validates proc-title-template as Redis does: every {var}
// known ("{{" is a literal brace), and the expansion not empty once blanks
// are trimmed (the title and server mode count as empty).
func checkProcTitle(v *value) error {
	bad := errors.New("template format is invalid or contains unknown variables")
	t, nonEmpty := v.s, false
	for t != "" {
		i := strings.IndexByte(t, '{')
		if i < 0 {
			nonEmpty = nonEmpty || strings.Trim(t, " ") != ""
			break
		}
		nonEmpty = nonEmpty || strings.Trim(t[:i], " ") != ""
		t = t[i+1:]
		switch {
		case t == "":
			return bad
		case t[0] == '{':
			nonEmpty = true
			t = t[1:]
			continue
		}
		j := strings.IndexByte(t, '}')
		if j < 0 {
			return bad
		}
		expands, ok := procTitleVars[t[:j]]
		if !ok {
			return bad
		}
		nonEmpty = nonEmpty || expands
		t = t[j+1:]
	}
	if !nonEmpty {
		return bad
	}
	return nil
}

// Upstream is a parsed upstream URL.
type Upstream struct {
	Addr     string // host:port
	Username string // empty: none (or "default" when only a password is given)
	Password string
	DB       int
	// TLS: a rediss:// URL, the connection is TLS (tls-* settings).
	TLS bool
	// Host is the host part, which a TLS connection without a configured
	// CA verifies the certificate against.
	Host string
	// Sentinel is set for a sentinel:// URL: Addr is then empty (the
	// sentinels name the master) and the credentials and DB are the
	// master's.
	Sentinel *UpstreamSentinel
}

// upstreamSyntax is the shape an upstream URL must have.
const upstreamSyntax = "redis[s]://[user:password@]host:port[/db]"

// ParseUpstream validates and parses a redis://[user:password@]host:port[/db]
// URL, or a rediss:// one (TLS). The port defaults to 6379 and the db to 0.
func ParseUpstream(s string) (Upstream, error) {
	bad := func(why string) (Upstream, error) {
		return Upstream{}, fmt.Errorf("argument must be a %s URL (%s)", upstreamSyntax, why)
	}
	if strings.HasPrefix(s, "sentinel://") {
		return parseSentinelUpstream(s)
	}
	u, err := url.Parse(s)
	if err != nil {
		return bad("malformed")
	}
	if u.Scheme != "redis" && u.Scheme != "rediss" {
		return bad("scheme must be redis or rediss")
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
	up := Upstream{Addr: joinHostPort(host, port), TLS: u.Scheme == "rediss", Host: host}
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
