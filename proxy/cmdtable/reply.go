package cmdtable

import (
	"github.com/spillway/spillway/proxy/resp"
)

// WriteInfo writes one element of COMMAND / COMMAND INFO for c, exactly as
// Redis 7.0 does, with the view's subcommands of c; a nil c writes the null
// Redis sends for unknown names. Subcommands are written in name order
// (Redis's own order is its hash table's and varies between runs).
func (v *View) WriteInfo(w *resp.Writer, c *Command) {
	if c == nil {
		w.Null()
		return
	}
	w.Array(10)
	w.BulkString(c.Name)
	w.Int(int64(c.Arity))
	writeStatusSet(w, c.Flags)
	w.Int(int64(c.FirstKey))
	w.Int(int64(c.LastKey))
	w.Int(int64(c.Step))
	writeStatusSet(w, c.ACLCategories)
	w.Set(len(c.Tips))
	for _, t := range c.Tips {
		w.BulkString(t)
	}
	w.Set(len(c.KeySpecs))
	for i := range c.KeySpecs {
		writeKeySpec(w, &c.KeySpecs[i])
	}
	if c.Subcommands == nil {
		w.Set(0)
		return
	}
	subs := v.subs[c]
	w.Array(len(subs))
	for _, s := range subs {
		v.WriteInfo(w, s)
	}
}

func writeStatusSet(w *resp.Writer, ss []string) {
	w.Set(len(ss))
	for _, s := range ss {
		w.Simple(s)
	}
}

func writeKeySpec(w *resp.Writer, ks *KeySpec) {
	if ks.Notes != "" {
		w.Map(4)
		w.BulkString("notes")
		w.BulkString(ks.Notes)
	} else {
		w.Map(3)
	}
	w.BulkString("flags")
	writeStatusSet(w, ks.Flags)

	w.BulkString("begin_search")
	w.Map(2)
	w.BulkString("type")
	bs := &ks.BeginSearch
	switch bs.Type {
	case BeginIndex:
		w.BulkString("index")
		w.BulkString("spec")
		w.Map(1)
		w.BulkString("index")
		w.Int(int64(bs.Index))
	case BeginKeyword:
		w.BulkString("keyword")
		w.BulkString("spec")
		w.Map(2)
		w.BulkString("keyword")
		w.BulkString(bs.Keyword)
		w.BulkString("startfrom")
		w.Int(int64(bs.StartFrom))
	default:
		w.BulkString("unknown")
		w.BulkString("spec")
		w.Map(0)
	}

	w.BulkString("find_keys")
	w.Map(2)
	w.BulkString("type")
	fk := &ks.FindKeys
	switch fk.Type {
	case FindRange:
		w.BulkString("range")
		w.BulkString("spec")
		w.Map(3)
		w.BulkString("lastkey")
		w.Int(int64(fk.LastKey))
		w.BulkString("keystep")
		w.Int(int64(fk.KeyStep))
		w.BulkString("limit")
		w.Int(int64(fk.Limit))
	case FindKeyNum:
		w.BulkString("keynum")
		w.BulkString("spec")
		w.Map(3)
		w.BulkString("keynumidx")
		w.Int(int64(fk.KeyNumIdx))
		w.BulkString("firstkey")
		w.Int(int64(fk.FirstKey))
		w.BulkString("keystep")
		w.Int(int64(fk.KeyStep))
	default:
		w.BulkString("unknown")
		w.BulkString("spec")
		w.Map(0)
	}
}

// WriteDocs writes one entry of COMMAND DOCS: c's full name followed by its
// documentation map, with the view's subcommands of c (the caller writes the
// enclosing map header). c must not be nil.
func (v *View) WriteDocs(w *resp.Writer, c *Command) {
	w.BulkString(c.Name)
	v.writeDocsMap(w, c)
}

func (v *View) writeDocsMap(w *resp.Writer, c *Command) {
	d := &c.Docs
	n := 3
	for _, present := range [...]bool{d.Complexity != "", len(d.DocFlags) > 0, d.DeprecatedSince != "",
		d.ReplacedBy != "", len(d.History) > 0, len(d.Arguments) > 0, c.Subcommands != nil} {
		if present {
			n++
		}
	}
	w.Map(n)
	w.BulkString("summary")
	w.BulkString(d.Summary)
	w.BulkString("since")
	w.BulkString(d.Since)
	w.BulkString("group")
	w.BulkString(d.Group)
	if d.Complexity != "" {
		w.BulkString("complexity")
		w.BulkString(d.Complexity)
	}
	if len(d.DocFlags) > 0 {
		w.BulkString("doc_flags")
		writeStatusSet(w, d.DocFlags)
	}
	if d.DeprecatedSince != "" {
		w.BulkString("deprecated_since")
		w.BulkString(d.DeprecatedSince)
	}
	if d.ReplacedBy != "" {
		w.BulkString("replaced_by")
		w.BulkString(d.ReplacedBy)
	}
	if len(d.History) > 0 {
		w.BulkString("history")
		w.Set(len(d.History))
		for _, h := range d.History {
			w.Array(2)
			w.BulkString(h.Version)
			w.BulkString(h.Change)
		}
	}
	if len(d.Arguments) > 0 {
		w.BulkString("arguments")
		writeArgs(w, d.Arguments)
	}
	if c.Subcommands != nil {
		subs := v.subs[c]
		w.BulkString("subcommands")
		w.Map(len(subs))
		for _, s := range subs {
			v.WriteDocs(w, s)
		}
	}
}

func writeArgs(w *resp.Writer, args []Arg) {
	w.Array(len(args))
	for i := range args {
		a := &args[i]
		hasToken := a.Token != "" || a.EmptyToken
		hasKids := a.Type == "oneof" || a.Type == "block"
		n := 2
		for _, present := range [...]bool{a.HasKeySpec, hasToken, a.Summary != "", a.Since != "",
			len(a.Flags) > 0, a.DeprecatedSince != "", hasKids} {
			if present {
				n++
			}
		}
		w.Map(n)
		w.BulkString("name")
		w.BulkString(a.Name)
		w.BulkString("type")
		w.BulkString(a.Type)
		if a.HasKeySpec {
			w.BulkString("key_spec_index")
			w.Int(int64(a.KeySpecIndex))
		}
		if hasToken {
			w.BulkString("token")
			w.BulkString(a.Token)
		}
		if a.Summary != "" {
			w.BulkString("summary")
			w.BulkString(a.Summary)
		}
		if a.Since != "" {
			w.BulkString("since")
			w.BulkString(a.Since)
		}
		if len(a.Flags) > 0 {
			w.BulkString("flags")
			writeStatusSet(w, a.Flags)
		}
		if a.DeprecatedSince != "" {
			w.BulkString("deprecated_since")
			w.BulkString(a.DeprecatedSince)
		}
		if hasKids {
			w.BulkString("arguments")
			writeArgs(w, a.Arguments)
		}
	}
}
