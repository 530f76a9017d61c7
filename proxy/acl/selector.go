// Package acl holds Redis 7.0's ACL users: their rules (flags, passwords,
// selectors of commands, keys and channels), the parser of ACL SETUSER's
// rules and its error messages, the permission check every command goes
// through, the description ACL LIST and ACL GETUSER show, and the ACL LOG.
// It follows Redis's src/acl.c; it knows nothing of connections: the server
// asks it whether a user may run a command and acts on the answer.
//
// Rules are immutable once published: a change builds new Rules and swaps
// them into the User atomically, so a connection checks a command against
// a consistent set of rules without a lock.
package acl

import (
	"strings"
	"sync"

	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/cstr"
)

// Key permissions of a key pattern (%R~, %W~, ~ for both).
const (
	permRead  uint8 = 1
	permWrite uint8 = 2
	permAll         = permRead | permWrite
)

// categories are Redis 7.0's ACL categories, in ACLCommandCategories'
// order (ACL CAT's reply and the order ACL GETUSER tries them in).
var categories = [...]string{
	"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
	"bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast",
	"slow", "blocking", "dangerous", "connection", "transaction", "scripting",
}

// universe is every command and subcommand, each container followed by
// its subcommands, with each one's category bits (by command ID).
var universe struct {
	once sync.Once
	cmds []*cmdtable.Command
	cats []uint32 // by ID: bit i is categories[i]
}

func commands() ([]*cmdtable.Command, []uint32) {
	universe.once.Do(func() {
		universe.cats = make([]uint32, cmdtable.NumIDs())
		for _, c := range cmdtable.All() {
			add(c)
			for _, s := range c.Subcommands {
				add(s)
			}
		}
	})
	return universe.cmds, universe.cats
}

func add(c *cmdtable.Command) {
	universe.cmds = append(universe.cmds, c)
	var m uint32
	for _, cat := range c.ACLCategories {
		if i := categoryIndex(strings.TrimPrefix(cat, "@")); i >= 0 {
			m |= 1 << i
		}
	}
	universe.cats[c.ID()] = m
}

// categoryIndex returns the index of a category name (any case), or -1.
func categoryIndex(name string) int {
	for i, c := range categories {
		if cstr.EqualFold(name, c) && len(name) == len(c) {
			return i
		}
	}
	return -1
}

// Categories returns the ACL categories, as ACL CAT lists them.
func Categories() []string { return categories[:] }

// CategoryCommands returns the full names of the commands and subcommands
// in a category (ACL CAT category), or ok false for an unknown category.
func CategoryCommands(name string) (names []string, ok bool) {
	i := categoryIndex(name)
	if i < 0 {
		return nil, false
	}
	cmds, cats := commands()
	for _, c := range cmds {
		if cats[c.ID()]&(1<<i) != 0 {
			names = append(names, c.Name)
		}
	}
	return names, true
}

// keyPattern is one key pattern of a selector and the access it grants.
type keyPattern struct {
	pattern string
	perm    uint8
}

// selector is one set of command, key and channel permissions (Redis's
// aclSelector). A user's first selector is its root one.
type selector struct {
	root        bool
	allKeys     bool
	allChannels bool
	// allCommands: no command bit is clear (+@all and nothing removed).
	allCommands bool
	// future: +@all or allcommands was the last reset of the commands
	// (Redis's reserved bit: commands added later are allowed).
	future bool
	cmds   []uint64 // bit per command ID
	// firstArgs are the first arguments allowed of commands whose bit is
	// clear (+select|0), by command ID.
	firstArgs map[int][]string
	keys      []keyPattern
	channels  []string
}

func newSelector(root, allChannels bool) *selector {
	return &selector{root: root, allChannels: allChannels, cmds: make([]uint64, (cmdtable.NumIDs()+63)/64)}
}

func (s *selector) clone() *selector {
	n := *s
	n.cmds = append([]uint64(nil), s.cmds...)
	n.keys = append([]keyPattern(nil), s.keys...)
	n.channels = append([]string(nil), s.channels...)
	if s.firstArgs != nil {
		n.firstArgs = make(map[int][]string, len(s.firstArgs))
		for id, a := range s.firstArgs {
			n.firstArgs[id] = append([]string(nil), a...)
		}
	}
	return &n
}

func (s *selector) bit(id int) bool { return s.cmds[id/64]&(1<<(id%64)) != 0 }

func (s *selector) setBit(id int, v bool) {
	if v {
		s.cmds[id/64] |= 1 << (id % 64)
		return
	}
	s.cmds[id/64] &^= 1 << (id % 64)
	s.allCommands = false
}

// changePerm allows or forbids a command; for a container, its
// subcommands too (ACLChangeSelectorPerm).
func (s *selector) changePerm(c *cmdtable.Command, allow bool) {
	s.setBit(c.ID(), allow)
	delete(s.firstArgs, c.ID())
	for _, sub := range c.Subcommands {
		s.setBit(sub.ID(), allow)
	}
}

func (s *selector) setCategory(i int, allow bool) {
	cmds, cats := commands()
	for _, c := range cmds {
		if cats[c.ID()]&(1<<i) != 0 {
			s.changePerm(c, allow)
		}
	}
}

func (s *selector) setAll(allow bool) {
	var v uint64
	if allow {
		v = ^uint64(0)
	}
	for i := range s.cmds {
		s.cmds[i] = v
	}
	s.allCommands, s.future = allow, allow
	s.firstArgs = nil
}

func (s *selector) addFirstArg(id int, arg string) {
	if s.firstArgs == nil {
		s.firstArgs = map[int][]string{}
	}
	for _, a := range s.firstArgs[id] {
		if cstr.EqualFold(a, arg) && len(a) == len(arg) {
			return
		}
	}
	s.firstArgs[id] = append(s.firstArgs[id], arg)
}

// hasSpaces is ACLStringHasSpaces: C isspace or NUL.
func hasSpaces(s string) bool {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ' ', '\t', '\n', '\v', '\f', '\r', 0:
			return true
		}
	}
	return false
}

// lookupCommand is ACLLookupCommand: "name" or "container|sub".
func lookupCommand(name string) *cmdtable.Command {
	return cmdtable.LookupFullName([]byte(name))
}

// apply applies one selector rule (ACLSetSelector).
func (s *selector) apply(op string) errCode {
	switch {
	case op == "":
		return errInvalid
	case cstr.EqualFold(op, "allkeys") || op == "~*":
		s.allKeys, s.keys = true, nil
	case cstr.EqualFold(op, "resetkeys"):
		s.allKeys, s.keys = false, nil
	case cstr.EqualFold(op, "allchannels") || op == "&*":
		s.allChannels, s.channels = true, nil
	case cstr.EqualFold(op, "resetchannels"):
		s.allChannels, s.channels = false, nil
	case cstr.EqualFold(op, "allcommands") || cstr.EqualFold(op, "+@all"):
		s.setAll(true)
	case cstr.EqualFold(op, "nocommands") || cstr.EqualFold(op, "-@all"):
		s.setAll(false)
	case op[0] == '~' || op[0] == '%':
		return s.addKeyPattern(op)
	case op[0] == '&':
		if s.allChannels {
			return errIsDir
		}
		pat := op[1:]
		if hasSpaces(pat) {
			return errInvalid
		}
		for _, c := range s.channels {
			if c == pat {
				return errNone
			}
		}
		s.channels = append(s.channels, pat)
	case op[0] == '+' && (len(op) < 2 || op[1] != '@'):
		return s.allowCommand(op[1:])
	case op[0] == '-' && (len(op) < 2 || op[1] != '@'):
		c := lookupCommand(op[1:])
		if c == nil {
			return errNoEnt
		}
		s.changePerm(c, false)
	case op[0] == '+' || op[0] == '-':
		i := categoryIndex(op[2:])
		if i < 0 {
			return errNoEnt
		}
		s.setCategory(i, op[0] == '+')
	default:
		return errInvalid
	}
	return errNone
}

func (s *selector) addKeyPattern(op string) errCode {
	if s.allKeys {
		return errExist
	}
	perm, off := permAll, 1
	if op[0] == '%' {
		// As Redis: R and W once each, then '~' (or nothing: an empty
		// pattern).
		perm = 0
		ok := true
	scan:
		for ; off < len(op); off++ {
			switch ch := op[off]; {
			case (ch == 'r' || ch == 'R') && perm&permRead == 0:
				perm |= permRead
			case (ch == 'w' || ch == 'W') && perm&permWrite == 0:
				perm |= permWrite
			case ch == '~':
				off++
				break scan
			default:
				ok = false
				break scan
			}
		}
		if perm == 0 || !ok {
			return errInvalid
		}
	}
	pat := op[off:]
	if hasSpaces(pat) {
		return errInvalid
	}
	for i := range s.keys {
		if s.keys[i].pattern == pat {
			s.keys[i].perm |= perm
			s.allKeys = false
			return errNone
		}
	}
	s.keys = append(s.keys, keyPattern{pat, perm})
	s.allKeys = false
	return errNone
}

// allowCommand is "+name", "+container|sub" or "+command|first-arg".
func (s *selector) allowCommand(name string) errCode {
	bar := strings.LastIndexByte(name, '|')
	if bar < 0 {
		c := lookupCommand(name)
		if c == nil {
			return errNoEnt
		}
		s.changePerm(c, true)
		return errNone
	}
	base, sub := name[:bar], name[bar+1:]
	c := lookupCommand(base)
	switch {
	case c == nil:
		return errNoEnt
	case c.Parent() != nil:
		return errChild
	case sub == "":
		return errInvalid
	case len(c.Subcommands) > 0:
		sc := lookupCommand(name)
		if sc == nil {
			return errNoEnt
		}
		s.changePerm(sc, true)
	default:
		s.addFirstArg(c.ID(), sub)
	}
	return errNone
}

// errCode is the reason a rule is refused (the errno of ACLSetUser).
type errCode uint8

const (
	errNone errCode = iota
	errInvalid
	errNoEnt
	errExist
	errIsDir
	errNoDev
	errBadMsg
	errChild
	errFormat
)

// String returns ACLSetUserStringError's text.
func (e errCode) String() string {
	switch e {
	case errNoEnt:
		return "Unknown command or category name in ACL"
	case errInvalid:
		return "Syntax error"
	case errExist:
		return "Adding a pattern after the * pattern (or the 'allkeys' flag) is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns"
	case errIsDir:
		return "Adding a pattern after the * pattern (or the 'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with an empty list of channels"
	case errNoDev:
		return "The password you are trying to remove from the user does not exist"
	case errBadMsg:
		return "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"
	case errChild:
		return "Allowing first-arg of a subcommand is not supported"
	}
	return "Wrong format"
}
