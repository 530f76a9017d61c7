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

// View is the part of the table a server serves: what the COMMAND family
// describes, so that a client probing a server's capabilities is told
// exactly what it may call. A container (CONFIG, CLIENT...) is in the view
// when it or any of its subcommands is served, and is described with its
// served subcommands only. A View is read-only once built and safe for
// concurrent use.
type View struct {
	top  []*Command              // listed top-level commands, by name
	subs map[*Command][]*Command // listed subcommands of each listed container
	in   map[*Command]struct{}   // every listed command and subcommand
}

// Full is the view of every command of the table (a server that forwards
// every command, or Redis itself).
var Full *View

// NewView returns the view of the commands served reports true for. served
// is called once per command and subcommand, during NewView only.
func NewView(served func(*Command) bool) *View {
	v := &View{subs: make(map[*Command][]*Command), in: make(map[*Command]struct{})}
	for _, c := range commandTable {
		var subs []*Command
		for _, s := range c.Subcommands {
			if served(s) {
				subs = append(subs, s)
			}
		}
		if len(subs) == 0 && !served(c) {
			continue
		}
		v.top = append(v.top, c)
		v.in[c] = struct{}{}
		if c.Subcommands != nil {
			v.subs[c] = subs
		}
		for _, s := range subs {
			v.in[s] = struct{}{}
		}
	}
	return v
}

// Has reports whether c (a command or subcommand) is in the view.
func (v *View) Has(c *Command) bool {
	_, ok := v.in[c]
	return ok
}

// Commands returns the view's top-level commands, sorted by name.
func (v *View) Commands() []*Command { return v.top }

// Subcommands returns the view's subcommands of c, sorted by name (nil
// for a plain command or a command not in the view).
func (v *View) Subcommands(c *Command) []*Command { return v.subs[c] }

// lookup resolves name as LookupFullName does, within the view.
func (v *View) lookup(name []byte) *Command {
	c := LookupFullName(name)
	if c == nil || !v.Has(c) {
		return nil
	}
	return c
}

// WriteCommand writes the reply to COMMAND: every command's info.
func (v *View) WriteCommand(w *resp.Writer) {
	w.Array(len(v.top))
	for _, c := range v.top {
		v.WriteInfo(w, c)
	}
}

// WriteCommandInfo writes the reply to COMMAND INFO [name ...]. No names
// means every command; unknown names (and commands not in the view) yield
// nulls. Names may be "container|sub".
func (v *View) WriteCommandInfo(w *resp.Writer, names [][]byte) {
	if len(names) == 0 {
		v.WriteCommand(w)
		return
	}
	w.Array(len(names))
	for _, n := range names {
		v.WriteInfo(w, v.lookup(n))
	}
}

// WriteCommandDocs writes the reply to COMMAND DOCS [name ...]: a map from
// full name to docs, of every command when no names are given, else of the
// names that are in the view (others are skipped).
func (v *View) WriteCommandDocs(w *resp.Writer, names [][]byte) {
	if len(names) == 0 {
		w.Map(len(v.top))
		for _, c := range v.top {
			v.WriteDocs(w, c)
		}
		return
	}
	n := 0
	for _, name := range names {
		if v.lookup(name) != nil {
			n++
		}
	}
	w.Map(n)
	for _, name := range names {
		if c := v.lookup(name); c != nil {
			v.WriteDocs(w, c)
		}
	}
}

// WriteCommandCount writes the reply to COMMAND COUNT.
func (v *View) WriteCommandCount(w *resp.Writer) { w.Int(int64(len(v.top))) }

// WriteCommandList writes the reply to COMMAND LIST [FILTERBY MODULE name |
// ACLCAT category | PATTERN pattern]: every command followed by its
// subcommands, filtered. A malformed filter writes "ERR syntax error".
func (v *View) WriteCommandList(w *resp.Writer, args [][]byte) {
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
	v.walk(func(c *Command) {
		if match == nil || match(c) {
			n++
		}
	})
	w.Array(n)
	v.walk(func(c *Command) {
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

// walk visits every command of the view, each followed by its
// subcommands.
func (v *View) walk(f func(*Command)) {
	for _, c := range v.top {
		f(c)
		for _, s := range v.subs[c] {
			f(s)
		}
	}
}

// WriteCommandGetKeys writes the reply to COMMAND GETKEYS: args is the
// command invocation to inspect (args[0] its name). A command not in the
// view is "ERR Invalid command specified", as an unknown one.
func (v *View) WriteCommandGetKeys(w *resp.Writer, args [][]byte) {
	v.writeGetKeys(w, args, false)
}

// WriteCommandGetKeysAndFlags writes the reply to COMMAND GETKEYSANDFLAGS.
func (v *View) WriteCommandGetKeysAndFlags(w *resp.Writer, args [][]byte) {
	v.writeGetKeys(w, args, true)
}

func (v *View) writeGetKeys(w *resp.Writer, args [][]byte, withFlags bool) {
	c := LookupArgs(args)
	if c == nil || !v.Has(c) {
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
