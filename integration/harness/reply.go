package harness

import (
	"bytes"
	"fmt"
	"sort"
	"strconv"
	"strings"
)

// Reply is one parsed RESP2/RESP3 reply together with its exact wire bytes.
//
// Type is the RESP type byte ('+', '-', ':', '$', '*', '_', ',', '#', '!',
// '=', '(', '%', '~', '>'); it is 0 when the reply could not be read, and Err
// then says why. An attribute ('|') preceding a reply is folded into Attr of
// the reply it annotates, and its bytes are part of that reply's Raw.
type Reply struct {
	Type byte
	// Str holds the payload of simple strings, errors, bulk and verbatim
	// strings (verbatim without its "fmt:" prefix), doubles, big numbers,
	// booleans ("t"/"f") and integers (decimal text).
	Str string
	// Int is the value of an integer reply.
	Int int64
	// Null is set for "_", "$-1" and "*-1".
	Null bool
	// Elems holds array, set and push elements; for maps and attributes the
	// keys and values interleaved (k1, v1, k2, v2, ...).
	Elems []Reply
	// Attr is the attribute map sent before this reply, if any.
	Attr *Reply
	// Raw is the exact bytes of the reply on the wire.
	Raw []byte
	// Err is a transport or protocol error; Type is 0 when it is set.
	Err error
}

// IsError reports whether the reply is a simple or blob error.
func (r Reply) IsError() bool { return r.Type == '-' || r.Type == '!' }

// IsAggregate reports whether the reply has elements (array, set, push, map).
func (r Reply) IsAggregate() bool {
	switch r.Type {
	case '*', '~', '>', '%':
		return !r.Null
	}
	return false
}

// String renders the reply for failure messages, redis-cli style, with long
// payloads truncated.
func (r Reply) String() string {
	var b strings.Builder
	r.format(&b, "")
	return b.String()
}

func (r Reply) format(b *strings.Builder, indent string) {
	if r.Err != nil {
		fmt.Fprintf(b, "(transport error) %v", r.Err)
		return
	}
	if r.Null {
		b.WriteString("(nil)")
		return
	}
	switch r.Type {
	case '+':
		b.WriteString(Trunc(r.Str, 200))
	case '-', '!':
		b.WriteString("(error) " + Trunc(r.Str, 200))
	case ':':
		fmt.Fprintf(b, "(integer) %d", r.Int)
	case '$', '=':
		b.WriteString(strconv.Quote(Trunc(r.Str, 200)))
	case ',':
		b.WriteString("(double) " + r.Str)
	case '(':
		b.WriteString("(big number) " + r.Str)
	case '#':
		b.WriteString("(boolean) " + r.Str)
	case '*', '~', '>', '%':
		if len(r.Elems) == 0 {
			b.WriteString("(empty " + typeName(r.Type) + ")")
			return
		}
		step := 1
		if r.Type == '%' {
			step = 2
		}
		b.WriteString("(" + typeName(r.Type) + ")")
		for i := 0; i < len(r.Elems); i += step {
			if i >= 64 {
				fmt.Fprintf(b, "\n%s... %d more", indent, len(r.Elems)-i)
				break
			}
			fmt.Fprintf(b, "\n%s%d) ", indent, i/step+1)
			r.Elems[i].format(b, indent+"   ")
			if step == 2 && i+1 < len(r.Elems) {
				b.WriteString(" => ")
				r.Elems[i+1].format(b, indent+"   ")
			}
		}
	default:
		fmt.Fprintf(b, "(type %q) %q", r.Type, Trunc(string(r.Raw), 200))
	}
}

func typeName(t byte) string {
	switch t {
	case '*':
		return "array"
	case '~':
		return "set"
	case '>':
		return "push"
	case '%':
		return "map"
	}
	return string(t)
}

// Trunc shortens s to at most n bytes, marking what was cut.
func Trunc(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return fmt.Sprintf("%s...(%d bytes)", s[:n], len(s))
}

// Canonical returns r with the top-level elements of an array, set or push
// sorted by their wire bytes, and the pairs of a map sorted by key (then
// value) bytes, with Raw re-encoded to match. Use it for replies whose order
// Redis leaves unspecified (KEYS, SMEMBERS, RESP3 sets and maps). Other
// replies are returned unchanged.
func Canonical(r Reply) Reply {
	if r.Err != nil || r.Null {
		return r
	}
	switch r.Type {
	case '*', '~', '>':
		elems := append([]Reply(nil), r.Elems...)
		sort.SliceStable(elems, func(i, j int) bool { return bytes.Compare(elems[i].Raw, elems[j].Raw) < 0 })
		return reencode(r, elems)
	case '%':
		return CanonicalPairs(r)
	}
	return r
}

// CanonicalPairs sorts the elements of r as (key, value) pairs, by key and
// then value bytes: for RESP3 maps and for RESP2 flat pair arrays such as
// HGETALL or CONFIG GET. A reply with an odd element count is returned
// unchanged.
func CanonicalPairs(r Reply) Reply {
	if r.Err != nil || r.Null || len(r.Elems)%2 != 0 {
		return r
	}
	n := len(r.Elems) / 2
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		ka, kb := r.Elems[2*idx[a]].Raw, r.Elems[2*idx[b]].Raw
		if c := bytes.Compare(ka, kb); c != 0 {
			return c < 0
		}
		return bytes.Compare(r.Elems[2*idx[a]+1].Raw, r.Elems[2*idx[b]+1].Raw) < 0
	})
	elems := make([]Reply, 0, len(r.Elems))
	for _, i := range idx {
		elems = append(elems, r.Elems[2*i], r.Elems[2*i+1])
	}
	return reencode(r, elems)
}

// reencode rebuilds Raw for an aggregate whose elements were reordered. The
// attribute bytes, if any, are kept in front.
func reencode(r Reply, elems []Reply) Reply {
	var raw []byte
	if r.Attr != nil {
		raw = append(raw, r.Attr.Raw...)
	}
	count := len(elems)
	if r.Type == '%' {
		count /= 2
	}
	raw = append(raw, r.Type)
	raw = strconv.AppendInt(raw, int64(count), 10)
	raw = append(raw, '\r', '\n')
	for _, e := range elems {
		raw = append(raw, e.Raw...)
	}
	r.Elems = elems
	r.Raw = raw
	return r
}

// EncodeCommand encodes args as a RESP multibulk request.
func EncodeCommand(args ...[]byte) []byte {
	n := 16
	for _, a := range args {
		n += len(a) + 16
	}
	b := make([]byte, 0, n)
	return appendCommand(b, args)
}

func appendCommand(b []byte, args [][]byte) []byte {
	b = append(b, '*')
	b = strconv.AppendInt(b, int64(len(args)), 10)
	b = append(b, '\r', '\n')
	for _, a := range args {
		b = append(b, '$')
		b = strconv.AppendInt(b, int64(len(a)), 10)
		b = append(b, '\r', '\n')
		b = append(b, a...)
		b = append(b, '\r', '\n')
	}
	return b
}
