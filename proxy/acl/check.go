package acl

import (
	"math"
	"strings"

	"github.com/spillway/spillway/proxy/cmdtable"
	"github.com/spillway/spillway/proxy/cstr"
)

// Reason is the outcome of a permission check, with Redis's ACL_* values:
// when several selectors refuse a command, the highest reason is reported.
type Reason uint8

// Outcomes of a check (and the reason of an ACL LOG entry).
const (
	OK Reason = iota
	DeniedCmd
	DeniedKey
	DeniedAuth
	DeniedChannel
)

// String returns the reason as ACL LOG shows it.
func (r Reason) String() string {
	switch r {
	case DeniedCmd:
		return "command"
	case DeniedKey:
		return "key"
	case DeniedChannel:
		return "channel"
	case DeniedAuth:
		return "auth"
	}
	return "unknown"
}

// Message returns getAclErrorMessage's text for a refusal ("can't run this
// command or subcommand"...), as scripts report it.
func (r Reason) Message() string {
	switch r {
	case DeniedCmd:
		return "can't run this command or subcommand"
	case DeniedKey:
		return "can't access at least one of the keys mentioned in the command arguments"
	case DeniedChannel:
		return "can't publish to the channel mentioned in the command"
	}
	return "lacking the permissions for the command"
}

// keyCache holds a command's key references across selectors.
type keyCache struct {
	done bool
	refs []cmdtable.KeyRef
	buf  [8]cmdtable.KeyRef
}

// Check reports whether the rules allow cmd with args (args[0] is the
// command name), as ACLCheckAllUserCommandPerm: OK if any selector allows
// it; else the reason and, for a key or channel, its index in args.
func (r *Rules) Check(cmd *cmdtable.Command, args [][]byte) (Reason, int) {
	var cache keyCache
	relevant, last := DeniedCmd, 0
	for _, s := range r.selectors {
		res, idx := s.check(cmd, args, &cache)
		if res == OK {
			return OK, 0
		}
		if res > relevant || res == relevant && idx > last {
			relevant, last = res, idx
		}
	}
	return relevant, last
}

func (s *selector) check(cmd *cmdtable.Command, args [][]byte, cache *keyCache) (Reason, int) {
	if !s.allCommands && !cmd.Is(cmdtable.FlagNoAuth) && !s.bit(cmd.ID()) {
		idx := 1
		if cmd.Parent() != nil {
			idx = 2
		}
		ok := false
		if idx < len(args) {
			for _, a := range s.firstArgs[cmd.ID()] {
				ok = ok || cstr.EqualFold(args[idx], a)
			}
		}
		if !ok {
			return DeniedCmd, 0
		}
	}
	if !s.allKeys && cmd.HasKeys() {
		if !cache.done {
			cache.refs, _ = cmd.KeyRefs(args, cache.buf[:0])
			cache.done = true
		}
		for _, ref := range cache.refs {
			if !s.keyAllowed(args[ref.Pos], ref.Flags) {
				return DeniedKey, ref.Pos
			}
		}
	}
	if !s.allChannels {
		first, pattern := channelArgs(cmd)
		if first > 0 {
			last := len(args)
			if cmd.Name == "publish" || cmd.Name == "spublish" {
				last = 2
			}
			for i := first; i < last && i < len(args); i++ {
				if !channelAllowed(s.channels, args[i], pattern) {
					return DeniedChannel, i
				}
			}
		}
	}
	return OK, 0
}

// FullKeyAccess reports whether a selector allows cmd with args and has
// the access the key flags f need (cmdtable.KeyAccess: read) to every
// key: all keys, or a "*" pattern granting it (Redis's
// ACLUserCheckCmdWithUnrestrictedKeyAccess).
func (r *Rules) FullKeyAccess(cmd *cmdtable.Command, args [][]byte, f cmdtable.KeyFlag) bool {
	var cache keyCache
	need := keyAccess(f)
	for _, s := range r.selectors {
		if res, _ := s.check(cmd, args, &cache); res != OK {
			continue
		}
		if s.allKeys {
			return true
		}
		for _, k := range s.keys {
			if k.perm&need == need && k.pattern == "*" {
				return true
			}
		}
	}
	return false
}

// keyAccess maps key spec flags to the permission they need.
func keyAccess(f cmdtable.KeyFlag) uint8 {
	var p uint8
	if f&cmdtable.KeyAccess != 0 {
		p |= permRead
	}
	if f&(cmdtable.KeyInsert|cmdtable.KeyDelete|cmdtable.KeyUpdate) != 0 {
		p |= permWrite
	}
	return p
}

func (s *selector) keyAllowed(key []byte, f cmdtable.KeyFlag) bool {
	need := keyAccess(f)
	for _, k := range s.keys {
		if k.perm&need == need && cstr.Match([]byte(k.pattern), key, false) {
			return true
		}
	}
	return false
}

// channelArgs returns where the channels a command publishes or
// subscribes to start in its arguments (0: none checked) and whether they
// are patterns (PSUBSCRIBE).
func channelArgs(cmd *cmdtable.Command) (first int, pattern bool) {
	switch cmd.Name {
	case "publish", "spublish", "subscribe", "ssubscribe":
		return 1, false
	case "psubscribe":
		return 1, true
	}
	return 0, false
}

// channelAllowed is ACLCheckChannelAgainstList: a channel matches the
// patterns of the list; a subscription pattern must equal one of them.
func channelAllowed(list []string, ch []byte, isPattern bool) bool {
	for _, p := range list {
		if isPattern && p == string(cstr.CString(ch)) || !isPattern && cstr.Match([]byte(p), ch, false) {
			return true
		}
	}
	return false
}

// ChannelCheck returns nil if clients of a user whose rules change from
// old to r keep every channel they may have subscribed to; else a
// function reporting whether a channel (a pattern, if isPattern) is no
// longer allowed, for the clients subscribed to it to be disconnected
// (ACLKillPubsubClientsIfNeeded).
func (r *Rules) ChannelCheck(old *Rules) func(ch []byte, isPattern bool) bool {
	var upcoming []string
	for _, s := range r.selectors {
		if s.allChannels {
			return nil
		}
		upcoming = append(upcoming, s.channels...)
	}
	match := true
	for _, s := range old.selectors {
		if s.allChannels {
			match = false
			break
		}
		for _, c := range s.channels {
			if indexOf(upcoming, c) < 0 {
				match = false
			}
		}
	}
	if match {
		return nil
	}
	return func(ch []byte, isPattern bool) bool { return !channelAllowed(upcoming, ch, isPattern) }
}

// describe is ACLDescribeSelector: keys, channels, then command rules.
func (s *selector) describe() string {
	var b strings.Builder
	if s.allKeys {
		b.WriteString("~* ")
	} else {
		for _, k := range s.keys {
			b.WriteString(k.String())
			b.WriteByte(' ')
		}
	}
	if s.allChannels {
		b.WriteString("&* ")
	} else {
		b.WriteString("resetchannels ")
		for _, c := range s.channels {
			b.WriteString("&" + c + " ")
		}
	}
	b.WriteString(s.commandRules())
	return b.String()
}

// commandRules is ACLDescribeSelectorCommandRules: +@all or -@all, then
// the categories that best fit the commands allowed, then single commands
// and first arguments, so that applying them rebuilds the same commands.
func (s *selector) commandRules() string {
	var b strings.Builder
	fake := newSelector(false, false)
	additive := !s.future
	if additive {
		b.WriteString("-@all ")
	} else {
		b.WriteString("+@all ")
		fake.setAll(true)
	}
	temp := newSelector(false, false)
	copy(temp.cmds, s.cmds)
	var applied [len(categories)]bool
	cmds, cats := commands()
	for {
		best, minDiff, maxSame := -1, math.MaxInt, 0
		for j := range categories {
			if applied[j] {
				continue
			}
			on, off := 0, 0
			for _, c := range cmds {
				if cats[c.ID()]&(1<<j) == 0 {
					continue
				}
				if temp.bit(c.ID()) {
					on++
				} else {
					off++
				}
			}
			diff, same := on, off
			if additive {
				diff, same = off, on
			}
			if same > diff && (diff < minDiff || diff == minDiff && same > maxSame) {
				best, minDiff, maxSame = j, diff, same
			}
		}
		if best < 0 {
			break
		}
		sign := "-@"
		if additive {
			sign = "+@"
		}
		b.WriteString(sign + categories[best] + " ")
		fake.setCategory(best, additive)
		temp.setCategory(best, !additive)
		applied[best] = true
	}
	for _, c := range cmds {
		user, f := s.bit(c.ID()), fake.bit(c.ID())
		if user != f {
			if user {
				b.WriteByte('+')
			} else {
				b.WriteByte('-')
			}
			b.WriteString(c.Name + " ")
			fake.changePerm(c, user)
		}
		if !user {
			for _, a := range s.firstArgs[c.ID()] {
				b.WriteString("+" + c.Name + "|" + a + " ")
			}
		}
	}
	return strings.TrimSuffix(b.String(), " ")
}
