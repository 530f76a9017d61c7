package cmdtable

import (
	"github.com/spillway/spillway/proxy/cstr"
	"github.com/spillway/spillway/proxy/resp"
)

// Replies of the COMMAND family. Each helper takes the arguments that
// follow the subcommand name (for COMMAND INFO a b: [a b]) and assumes the
// caller has already checked the COMMAND subcommand's own arity.

// ACL categories COMMAND LIST FILTERBY ACLCAT accepts (without '@').
var aclCategories = [...]string{
	"keyspace", "read", "write", "set", "sortedset", "list", "hash", "string",
	"bitmap", "hyperloglog", "geo", "stream", "pubsub", "admin", "fast",
	"slow", "blocking", "dangerous", "connection", "transaction", "scripting",
}

// WriteCommand writes the reply to COMMAND: every command's info.
func WriteCommand(w *resp.Writer) {
	w.Array(len(commandTable))
	for _, c := range commandTable {
		WriteInfo(w, c)
	}
}

// WriteCommandInfo writes the reply to COMMAND INFO [name ...]. No names
// means every command; unknown names yield nulls. Names may be
// "container|sub".
func WriteCommandInfo(w *resp.Writer, names [][]byte) {
	if len(names) == 0 {
		WriteCommand(w)
		return
	}
	w.Array(len(names))
	for _, n := range names {
		WriteInfo(w, LookupFullName(n))
	}
}

// WriteCommandDocs writes the reply to COMMAND DOCS [name ...]: a map from
// full name to docs, of every command when no names are given, else of the
// names that exist (unknown ones are skipped).
func WriteCommandDocs(w *resp.Writer, names [][]byte) {
	if len(names) == 0 {
		w.Map(len(commandTable))
		for _, c := range commandTable {
			WriteDocs(w, c)
		}
		return
	}
	n := 0
	for _, name := range names {
		if LookupFullName(name) != nil {
			n++
		}
	}
	w.Map(n)
	for _, name := range names {
		if c := LookupFullName(name); c != nil {
			WriteDocs(w, c)
		}
	}
}

// WriteCommandCount writes the reply to COMMAND COUNT.
func WriteCommandCount(w *resp.Writer) { w.Int(int64(len(commandTable))) }

// WriteCommandList writes the reply to COMMAND LIST [FILTERBY MODULE name |
// ACLCAT category | PATTERN pattern]: every command followed by its
// subcommands, filtered. A malformed filter writes "ERR syntax error".
func WriteCommandList(w *resp.Writer, args [][]byte) {
	var match func(*Command) bool
	for i := 0; i < len(args); i++ {
		more := len(args) - 1 - i
		if !cstr.EqualFold(args[i], "filterby") || more != 2 {
			w.Error("ERR syntax error")
			return
		}
		arg := args[i+2]
		switch {
		case cstr.EqualFold(args[i+1], "module"):
			match = func(*Command) bool { return false } // no modules
		case cstr.EqualFold(args[i+1], "aclcat"):
			match = aclCatMatcher(arg)
		case cstr.EqualFold(args[i+1], "pattern"):
			match = func(c *Command) bool { return cstr.Match(arg, []byte(c.Name), true) }
		default:
			w.Error("ERR syntax error")
			return
		}
		i += 2
	}
	n := 0
	walkAll(func(c *Command) {
		if match == nil || match(c) {
			n++
		}
	})
	w.Array(n)
	walkAll(func(c *Command) {
		if match == nil || match(c) {
			w.BulkString(c.Name)
		}
	})
}

func aclCatMatcher(arg []byte) func(*Command) bool {
	valid := false
	for _, cat := range aclCategories {
		if cstr.EqualFold(arg, cat) {
			valid = true
			break
		}
	}
	if !valid {
		return func(*Command) bool { return false }
	}
	return func(c *Command) bool {
		for _, cat := range c.ACLCategories {
			if len(cat) > 1 && cstr.EqualFold(arg, cat[1:]) {
				return true
			}
		}
		return false
	}
}

// walkAll visits every command, each followed by its subcommands.
func walkAll(f func(*Command)) {
	for _, c := range commandTable {
		f(c)
		for _, s := range c.Subcommands {
			f(s)
		}
	}
}

// WriteCommandGetKeys writes the reply to COMMAND GETKEYS: args is the
// command invocation to inspect (args[0] its name).
func WriteCommandGetKeys(w *resp.Writer, args [][]byte) {
	writeGetKeys(w, args, false)
}

// WriteCommandGetKeysAndFlags writes the reply to COMMAND GETKEYSANDFLAGS.
func WriteCommandGetKeysAndFlags(w *resp.Writer, args [][]byte) {
	writeGetKeys(w, args, true)
}

func writeGetKeys(w *resp.Writer, args [][]byte, withFlags bool) {
	c := LookupArgs(args)
	if c == nil {
		w.Error("ERR Invalid command specified")
		return
	}
	var buf [16]KeyRef
	refs, err := c.KeyRefs(args, buf[:0])
	if err != nil {
		w.Error(err.Error())
		return
	}
	w.Array(len(refs))
	for _, r := range refs {
		if !withFlags {
			w.Bulk(args[r.Pos])
			continue
		}
		w.Array(2)
		w.Bulk(args[r.Pos])
		n := 0
		for f := r.Flags; f != 0; f &= f - 1 {
			n++
		}
		w.Set(n)
		for i, name := range keyFlagNames {
			if r.Flags&(1<<i) != 0 {
				w.Simple(name)
			}
		}
	}
}
