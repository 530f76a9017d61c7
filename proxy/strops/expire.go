package strops

import (
	"math"

	"github.com/spillway/spillway/proxy/cstr"
)

// ExpireKind says how a SET or GETEX expire argument is to be read.
type ExpireKind uint8

// Expire argument kinds.
const (
	NoExpire   ExpireKind = iota
	ExpireEX              // seconds from now
	ExpirePX              // milliseconds from now
	ExpireEXAT            // unix time in seconds
	ExpirePXAT            // unix time in milliseconds
)

// StringOptions are the parsed options of SET or GETEX.
type StringOptions struct {
	NX, XX, Get bool // SET only
	KeepTTL     bool // SET only
	Persist     bool // GETEX only
	Kind        ExpireKind
	ExpireArg   []byte // the raw expire value when Kind != NoExpire
}

// Absolute converts the expire argument into a unix time in milliseconds
// (0 when Kind is NoExpire), as Redis's getExpireMillisecondsOrReply does
// for command cmd ("set", "getex", ...). Errors: ErrNotInteger, or
// ErrInvalidExpire(cmd) for a value <= 0 or one that overflows.
func (o *StringOptions) Absolute(now int64, cmd string) (int64, string) {
	if o.Kind == NoExpire {
		return 0, ""
	}
	return ExpireMillis(o.ExpireArg, o.Kind, now, cmd)
}

// ExpireMillis reads arg as an expire of the given kind (SET, GETEX, SETEX
// with ExpireEX, PSETEX with ExpirePX) and returns the absolute unix time
// in milliseconds. Errors: ErrNotInteger, ErrInvalidExpire(cmd).
func ExpireMillis(arg []byte, kind ExpireKind, now int64, cmd string) (int64, string) {
	v, ok := cstr.ParseInt(arg)
	if !ok {
		return 0, ErrNotInteger
	}
	seconds := kind == ExpireEX || kind == ExpireEXAT
	if v <= 0 || (seconds && v > math.MaxInt64/1000) {
		return 0, ErrInvalidExpire(cmd)
	}
	if seconds {
		v *= 1000
	}
	if kind == ExpireEX || kind == ExpirePX {
		v += now // wraps negative on overflow, caught below
	}
	if v <= 0 {
		return 0, ErrInvalidExpire(cmd)
	}
	return v, ""
}

// SetArgs is SET's parsed options with the expire resolved.
type SetArgs struct {
	StringOptions
	ExpireAt int64 // unix ms; 0 when no expire option was given
}

// ParseSet parses SET's options (the arguments after key and value) and
// resolves the expire against now (unix ms). Redis reports these errors
// before touching the key: ErrSyntax, then ErrNotInteger or
// ErrInvalidExpire("set").
func ParseSet(args [][]byte, now int64) (SetArgs, string) {
	o, e := parseStringOptions(args, true)
	if e != "" {
		return SetArgs{}, e
	}
	at, e := o.Absolute(now, "set")
	if e != "" {
		return SetArgs{}, e
	}
	return SetArgs{StringOptions: o, ExpireAt: at}, ""
}

// ParseGetEx parses GETEX's options (after the key). Only ErrSyntax is
// reported here: Redis replies null for a missing key and WRONGTYPE before
// validating the expire value, so the handler calls Absolute(now, "getex")
// after its lookup.
func ParseGetEx(args [][]byte) (StringOptions, string) {
	return parseStringOptions(args, false)
}

// parseStringOptions follows Redis's parseExtendedStringArgumentsOrReply:
// an option conflicting with one already given, or one the command does not
// take, or an expire option as the last argument, is a syntax error;
// repeating an option is allowed (the last value wins).
func parseStringOptions(args [][]byte, set bool) (StringOptions, string) {
	var o StringOptions
	for j := 0; j < len(args); j++ {
		opt := args[j]
		hasNext := j+1 < len(args)
		expireSet := o.Kind != NoExpire
		kind := NoExpire
		switch {
		case set && cstr.EqualFold(opt, "nx") && !o.XX:
			o.NX = true
		case set && cstr.EqualFold(opt, "xx") && !o.NX:
			o.XX = true
		case set && cstr.EqualFold(opt, "get"):
			o.Get = true
		case set && cstr.EqualFold(opt, "keepttl") && !expireSet:
			o.KeepTTL = true
		case !set && cstr.EqualFold(opt, "persist") && !expireSet:
			o.Persist = true
		case cstr.EqualFold(opt, "ex"):
			kind = ExpireEX
		case cstr.EqualFold(opt, "px"):
			kind = ExpirePX
		case cstr.EqualFold(opt, "exat"):
			kind = ExpireEXAT
		case cstr.EqualFold(opt, "pxat"):
			kind = ExpirePXAT
		default:
			return StringOptions{}, ErrSyntax
		}
		if kind == NoExpire {
			continue
		}
		if o.KeepTTL || o.Persist || (expireSet && o.Kind != kind) || !hasNext {
			return StringOptions{}, ErrSyntax
		}
		o.Kind, o.ExpireArg = kind, args[j+1]
		j++
	}
	return o, ""
}

// ExpireFlags are the NX/XX/GT/LT options of EXPIRE, PEXPIRE, EXPIREAT and
// PEXPIREAT.
type ExpireFlags struct {
	NX, XX, GT, LT bool
}

// ParseExpireFlags parses the EXPIRE family's options (after key and time).
// Redis checks them first, before the time value. Errors:
// ErrUnsupportedOption(opt), ErrExpireNXXX, ErrExpireGTLT.
func ParseExpireFlags(args [][]byte) (ExpireFlags, string) {
	var f ExpireFlags
	for _, a := range args {
		switch {
		case cstr.EqualFold(a, "nx"):
			f.NX = true
		case cstr.EqualFold(a, "xx"):
			f.XX = true
		case cstr.EqualFold(a, "gt"):
			f.GT = true
		case cstr.EqualFold(a, "lt"):
			f.LT = true
		default:
			return ExpireFlags{}, ErrUnsupportedOption(a)
		}
	}
	if f.NX && (f.XX || f.GT || f.LT) {
		return ExpireFlags{}, ErrExpireNXXX
	}
	if f.GT && f.LT {
		return ExpireFlags{}, ErrExpireGTLT
	}
	return f, ""
}

// ExpireWhen reads the EXPIRE family's time argument: seconds when
// unitSeconds (EXPIRE, EXPIREAT), else milliseconds, plus basetime (now in
// unix ms for EXPIRE and PEXPIRE, 0 for the AT forms). The result is a unix
// time in ms and may be in the past or negative (the key is then deleted).
// Errors: ErrNotInteger, ErrInvalidExpire(cmd) on overflow. Redis checks
// this before looking the key up.
func ExpireWhen(arg []byte, unitSeconds bool, basetime int64, cmd string) (int64, string) {
	when, ok := cstr.ParseInt(arg)
	if !ok {
		return 0, ErrNotInteger
	}
	if unitSeconds {
		if when > math.MaxInt64/1000 || when < math.MinInt64/1000 {
			return 0, ErrInvalidExpire(cmd)
		}
		when *= 1000
	}
	if when > math.MaxInt64-basetime {
		return 0, ErrInvalidExpire(cmd)
	}
	return when + basetime, ""
}

// Allows reports whether the flags let an existing key's expire be set to
// when, given its current expire (unix ms, or -1 for none). A key without
// an expire counts as an infinite TTL for GT and LT.
func (f ExpireFlags) Allows(current, when int64) bool {
	switch {
	case f.NX && current != -1:
		return false
	case f.XX && current == -1:
		return false
	case f.GT && (current == -1 || when <= current):
		return false
	case f.LT && current != -1 && when >= current:
		return false
	}
	return true
}

// TTL returns what TTL (ms false) or PTTL (ms true) replies for a key
// expiring at expireAt (unix ms) at time now: the remaining time, never
// negative, seconds rounded to nearest.
func TTL(expireAt, now int64, ms bool) int64 {
	ttl := max(expireAt-now, 0)
	if ms {
		return ttl
	}
	return (ttl + 500) / 1000
}
