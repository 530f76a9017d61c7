package acl

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/hex"
	"errors"
	"sort"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/spillway/spillway/proxy/cstr"
)

// User flags, in the order ACL LIST and ACL GETUSER show them.
const (
	flagOn uint8 = 1 << iota
	flagOff
	flagNoPass
	flagSkipSanitize
	flagSanitize
)

var flagNames = [...]string{"on", "off", "nopass", "skip-sanitize-payload", "sanitize-payload"}

// Rules are a user's flags, password hashes and selectors. They are
// immutable once a User publishes them.
type Rules struct {
	flags     uint8
	passwords []string     // SHA-256 hashes, lower-case hex
	selectors []*selector  // [0] is the root selector
	desc      atomic.Value // string: Describe's result, computed once
}

// newRules returns the rules of a user just created: off, no password,
// no command, key or channel (all channels if allChannels, Redis's
// acl-pubsub-default allchannels).
func newRules(allChannels bool) *Rules {
	return &Rules{flags: flagOff, selectors: []*selector{newSelector(true, allChannels)}}
}

func (r *Rules) clone() *Rules {
	n := &Rules{flags: r.flags, passwords: append([]string(nil), r.passwords...)}
	for _, s := range r.selectors {
		n.selectors = append(n.selectors, s.clone())
	}
	return n
}

// Enabled reports whether the user may authenticate (on).
func (r *Rules) Enabled() bool { return r.flags&flagOff == 0 }

// NoPass reports whether any password authenticates the user.
func (r *Rules) NoPass() bool { return r.flags&flagNoPass != 0 }

// Unrestricted reports whether the rules allow every command on every key
// and channel: checking a command against them can be skipped.
func (r *Rules) Unrestricted() bool {
	for _, s := range r.selectors {
		if s.allCommands && s.allKeys && s.allChannels {
			return true
		}
	}
	return false
}

// PasswordOK reports whether pass authenticates the user (enabled, and
// nopass or one of its passwords), comparing hashes in constant time.
func (r *Rules) PasswordOK(pass []byte) bool {
	if !r.Enabled() {
		return false
	}
	if r.NoPass() {
		return true
	}
	h := HashPassword(pass)
	ok := false
	for _, p := range r.passwords {
		if subtle.ConstantTimeCompare([]byte(h), []byte(p)) == 1 {
			ok = true
		}
	}
	return ok
}

// HashPassword returns the SHA-256 of a password in lower-case hex, the
// form ACL GETUSER shows and #hash rules take.
func HashPassword(pass []byte) string {
	sum := sha256.Sum256(pass)
	return hex.EncodeToString(sum[:])
}

// validHash is ACLCheckPasswordHash: 64 lower-case hex digits.
func validHash(h string) bool {
	if len(h) != 64 {
		return false
	}
	for i := 0; i < len(h); i++ {
		if !('0' <= h[i] && h[i] <= '9' || 'a' <= h[i] && h[i] <= 'f') {
			return false
		}
	}
	return true
}

// apply applies one rule to the user's rules (ACLSetUser).
func (r *Rules) apply(op string, allChannels bool) errCode {
	switch {
	case op == "":
		return errNone
	case cstr.EqualFold(op, "on"):
		r.flags = r.flags&^flagOff | flagOn
	case cstr.EqualFold(op, "off"):
		r.flags = r.flags&^flagOn | flagOff
	case cstr.EqualFold(op, "skip-sanitize-payload"):
		r.flags = r.flags&^flagSanitize | flagSkipSanitize
	case cstr.EqualFold(op, "sanitize-payload"):
		r.flags = r.flags&^flagSkipSanitize | flagSanitize
	case cstr.EqualFold(op, "nopass"):
		r.flags |= flagNoPass
		r.passwords = nil
	case cstr.EqualFold(op, "resetpass"):
		r.flags &^= flagNoPass
		r.passwords = nil
	case op[0] == '>' || op[0] == '#':
		h := op[1:]
		if op[0] == '>' {
			h = HashPassword([]byte(h))
		} else if !validHash(h) {
			return errBadMsg
		}
		found := false
		for _, p := range r.passwords {
			found = found || p == h
		}
		if !found {
			r.passwords = append(r.passwords, h)
		}
		r.flags &^= flagNoPass
	case op[0] == '<' || op[0] == '!':
		h := op[1:]
		if op[0] == '<' {
			h = HashPassword([]byte(h))
		} else if !validHash(h) {
			return errBadMsg
		}
		i := indexOf(r.passwords, h)
		if i < 0 {
			return errNoDev
		}
		r.passwords = append(r.passwords[:i:i], r.passwords[i+1:]...)
	case op[0] == '(' && op[len(op)-1] == ')':
		s := newSelector(false, allChannels)
		// As Redis, unbalanced quotes make an empty selector.
		args, _ := cstr.SplitArgs(op[1 : len(op)-1])
		for _, a := range args {
			if e := s.apply(a); e != errNone {
				return e
			}
		}
		r.selectors = append(r.selectors, s)
	case cstr.EqualFold(op, "clearselectors"):
		r.selectors = r.selectors[:1]
	case cstr.EqualFold(op, "reset"):
		for _, o := range []string{"resetpass", "resetkeys", "resetchannels"} {
			r.apply(o, allChannels)
		}
		if allChannels {
			r.apply("allchannels", allChannels)
		}
		for _, o := range []string{"off", "sanitize-payload", "clearselectors", "-@all"} {
			r.apply(o, allChannels)
		}
	default:
		return r.selectors[0].apply(op)
	}
	return errNone
}

func indexOf(list []string, s string) int {
	for i, x := range list {
		if x == s {
			return i
		}
	}
	return -1
}

// mergeSelectors joins a selector spread over several arguments ("(+get",
// "~k)") into one, as ACLMergeSelectorArguments does. An unmatched '('
// returns the index of the argument that opened it.
func mergeSelectors(ops []string) ([]string, int) {
	var out []string
	open := -1
	var cur string
	for j, op := range ops {
		// As Redis, a second '(' before the ')' starts over.
		if len(op) > 0 && op[0] == '(' && op[len(op)-1] != ')' {
			cur, open = op, j
			continue
		}
		if open >= 0 {
			cur += " " + op
			if len(op) > 0 && op[len(op)-1] == ')' {
				out = append(out, cur)
				open = -1
			}
			continue
		}
		out = append(out, op)
	}
	if open >= 0 {
		return nil, open
	}
	return out, -1
}

// Parse applies ACL rules to a copy of base (nil: a new user's rules) and
// returns the result, or Redis's error text for the first rule refused
// ("Error in ACL SETUSER modifier '...': ..."). allChannels is
// acl-pubsub-default allchannels. base is not modified.
func Parse(base *Rules, ops []string, allChannels bool) (*Rules, error) {
	merged, bad := mergeSelectors(ops)
	if bad >= 0 {
		return nil, errors.New("Unmatched parenthesis in acl selector starting at '" + ops[bad] + "'.")
	}
	var r *Rules
	if base == nil {
		r = newRules(allChannels)
	} else {
		r = base.clone()
	}
	for _, op := range merged {
		if e := r.apply(op, allChannels); e != errNone {
			return nil, errors.New("Error in ACL SETUSER modifier '" + op + "': " + e.String())
		}
	}
	return r, nil
}

// User is a named user; its rules change as a whole (SetRules).
type User struct {
	name  string
	rules atomic.Pointer[Rules]
}

// Name returns the user's name.
func (u *User) Name() string { return u.name }

// Rules returns the user's current rules.
func (u *User) Rules() *Rules { return u.rules.Load() }

// Registry is the set of users, the default one included, and the ACL
// LOG. It is safe for concurrent use.
type Registry struct {
	mu    sync.Mutex
	users map[string]*User
	def   *User
	// allChannels is acl-pubsub-default allchannels.
	allChannels atomic.Bool
	// Log is the ACL LOG.
	Log Log
}

// NewRegistry returns a registry holding the default user: on, nopass,
// every command, key and channel.
func NewRegistry() *Registry {
	r := &Registry{users: map[string]*User{}}
	def := &User{name: "default"}
	rules, _ := Parse(nil, []string{"+@all", "~*", "&*", "on", "nopass"}, false)
	def.rules.Store(rules)
	r.users["default"] = def
	r.def = def
	return r
}

// SetPubSubDefault follows acl-pubsub-default: whether users created (and
// reset) from now on get every channel.
func (r *Registry) SetPubSubDefault(allChannels bool) { r.allChannels.Store(allChannels) }

// Default returns the default user.
func (r *Registry) Default() *User { return r.def }

// Get returns the user named name, or nil.
func (r *Registry) Get(name string) *User {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.users[name]
}

// Users returns every user, sorted by name (bytewise, as Redis's rax).
func (r *Registry) Users() []*User {
	r.mu.Lock()
	list := make([]*User, 0, len(r.users))
	for _, u := range r.users {
		list = append(list, u)
	}
	r.mu.Unlock()
	sort.Slice(list, func(i, j int) bool { return list[i].name < list[j].name })
	return list
}

// SetUser creates or changes a user (ACL SETUSER): every rule applies, or
// none and the error is Redis's text. It returns the user and its rules
// before the change (nil if it was created).
func (r *Registry) SetUser(name string, ops []string) (*User, *Rules, error) {
	if hasSpaces(name) {
		return nil, nil, errors.New("Usernames can't contain spaces or null characters")
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	u := r.users[name]
	var old *Rules
	if u != nil {
		old = u.Rules()
	}
	rules, err := Parse(old, ops, r.allChannels.Load())
	if err != nil {
		return nil, nil, err
	}
	if u == nil {
		u = &User{name: name}
		r.users[name] = u
	}
	u.rules.Store(rules)
	return u, old, nil
}

// Delete removes users (ACL DELUSER) and returns those that existed.
// Naming the default user removes nothing and is an error.
func (r *Registry) Delete(names []string) ([]*User, error) {
	for _, n := range names {
		if n == "default" {
			return nil, errors.New("The 'default' user cannot be removed")
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	var gone []*User
	for _, n := range names {
		if u := r.users[n]; u != nil {
			delete(r.users, n)
			gone = append(gone, u)
		}
	}
	return gone, nil
}

// Replace swaps every user but the default one for those given (ACL LOAD,
// users of the config file): name and rules each. The default user takes
// the rules given for it, if any. It returns the users removed or
// replaced, whose connections must end.
func (r *Registry) Replace(users map[string]*Rules) []*User {
	r.mu.Lock()
	defer r.mu.Unlock()
	var gone []*User
	for n, u := range r.users {
		if n != "default" {
			gone = append(gone, u)
			delete(r.users, n)
		}
	}
	for n, rules := range users {
		if n == "default" {
			r.def.rules.Store(rules)
			continue
		}
		u := &User{name: n}
		u.rules.Store(rules)
		r.users[n] = u
	}
	return gone
}

// Authenticate returns the user name authenticates as with pass, or nil
// (unknown, disabled, or a wrong password).
func (r *Registry) Authenticate(name, pass []byte) *User {
	u := r.Get(string(name))
	if u == nil || !u.Rules().PasswordOK(pass) {
		return nil
	}
	return u
}

// SetDefaultPassword follows requirepass: the default user's passwords are
// reset to pass, or to nopass when pass is "".
func (r *Registry) SetDefaultPassword(pass string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	op := "nopass"
	if pass != "" {
		op = ">" + pass
	}
	rules, _ := Parse(r.def.Rules(), []string{"resetpass", op}, r.allChannels.Load())
	r.def.rules.Store(rules)
}

// Describe returns the user's rules in the form of ACL LIST, after
// "user <name> ": flags, password hashes, then the root selector and the
// others in parentheses.
func (r *Rules) Describe() string {
	if d, ok := r.desc.Load().(string); ok {
		return d
	}
	var b strings.Builder
	for i, n := range flagNames {
		if r.flags&(1<<i) != 0 {
			b.WriteString(n)
			b.WriteByte(' ')
		}
	}
	for _, p := range r.passwords {
		b.WriteByte('#')
		b.WriteString(p)
		b.WriteByte(' ')
	}
	for _, s := range r.selectors {
		if s.root {
			b.WriteString(s.describe())
		} else {
			b.WriteString(" (" + s.describe() + ")")
		}
	}
	d := b.String()
	r.desc.Store(d)
	return d
}

// Flags returns the user's flags as ACL GETUSER lists them.
func (r *Rules) Flags() []string {
	var out []string
	for i, n := range flagNames {
		if r.flags&(1<<i) != 0 {
			out = append(out, n)
		}
	}
	return out
}

// Passwords returns the user's password hashes.
func (r *Rules) Passwords() []string { return r.passwords }

// NumSelectors returns how many selectors the user has beyond the root one.
func (r *Rules) NumSelectors() int { return len(r.selectors) - 1 }

// Selector returns ACL GETUSER's description of a selector (0: the root
// one): its command rules, key patterns and channel patterns.
func (r *Rules) Selector(i int) (commands, keys, channels string) {
	s := r.selectors[i]
	commands = s.commandRules()
	if s.allKeys {
		keys = "~*"
	} else {
		parts := make([]string, len(s.keys))
		for j, k := range s.keys {
			parts[j] = k.String()
		}
		keys = strings.Join(parts, " ")
	}
	if s.allChannels {
		channels = "&*"
	} else {
		parts := make([]string, len(s.channels))
		for j, c := range s.channels {
			parts[j] = "&" + c
		}
		channels = strings.Join(parts, " ")
	}
	return commands, keys, channels
}

func (k keyPattern) String() string {
	switch k.perm {
	case permRead:
		return "%R~" + k.pattern
	case permWrite:
		return "%W~" + k.pattern
	}
	return "~" + k.pattern
}

// SetUserOps returns the rules as ACL SETUSER arguments that give a user
// reset beforehand the same permissions: the sanitize-payload flag, then
// the root selector's key patterns, channels and command rules (one
// argument each), then each other selector as one "(...)" argument. The
// on/off state and the passwords are left out: the caller chooses them
// (upstream mode's script users, proxy/upstream/aclmirror).
func (r *Rules) SetUserOps() []string {
	var ops []string
	if r.flags&flagSkipSanitize != 0 {
		ops = append(ops, "skip-sanitize-payload")
	} else if r.flags&flagSanitize != 0 {
		ops = append(ops, "sanitize-payload")
	}
	for _, s := range r.selectors {
		if !s.root {
			ops = append(ops, "("+strings.TrimSpace(s.describe())+")")
			continue
		}
		if s.allKeys {
			ops = append(ops, "~*")
		} else {
			for _, k := range s.keys {
				ops = append(ops, k.String())
			}
		}
		if s.allChannels {
			ops = append(ops, "&*")
		} else {
			ops = append(ops, "resetchannels")
			for _, c := range s.channels {
				ops = append(ops, "&"+c)
			}
		}
		ops = append(ops, strings.Fields(s.commandRules())...)
	}
	return ops
}
