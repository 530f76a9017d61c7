package upstream

import (
	"fmt"
	"strconv"

	"github.com/spillway/spillway/codec"
)

// How the demoter reads keys out of the upstream: under WATCH, whole,
// big structures in chunks of chunkSize elements.

// read WATCHes keys and reads each whole; a nil Value is a key that cannot
// be demoted (gone, or a type the cold store does not hold).
func (d *Demoter) read(c *Conn, keys [][]byte) ([]*Value, error) {
	watch := append([][]byte{[]byte("WATCH")}, keys...)
	c.SendArgs(watch)
	for _, k := range keys {
		c.SendArgs([][]byte{[]byte("TYPE"), k})
		c.SendArgs([][]byte{[]byte("PEXPIRETIME"), k})
		c.SendArgs([][]byte{[]byte("OBJECT"), []byte("ENCODING"), k})
	}
	if err := c.Flush(); err != nil {
		return nil, lost(err)
	}
	if _, err := c.Read(); err != nil {
		return nil, lost(err)
	}
	vals := make([]*Value, len(keys))
	for i, k := range keys {
		r, err := c.Read()
		if err != nil {
			return nil, lost(err)
		}
		t := typeByName(ReplyText(r))
		r, err = c.Read()
		if err != nil {
			return nil, lost(err)
		}
		exp, _ := IntReply(r)
		if r, err = c.Read(); err != nil {
			return nil, lost(err)
		}
		skiplist := ReplyText(r) == "skiplist"
		if t == codec.TypeNone || exp == -2 {
			continue
		}
		if exp < 0 {
			exp = 0
		}
		vals[i] = &Value{Key: k, Type: t, ExpireAt: exp, Skiplist: skiplist}
	}
	// Contents: a first request for every key, then more chunks for the
	// big ones until each is whole.
	type cursor struct {
		v    *Value
		next uint64 // SCAN cursor or next index
		seen map[string]bool
	}
	var open []*cursor
	for _, v := range vals {
		if v != nil {
			open = append(open, &cursor{v: v})
		}
	}
	for len(open) > 0 {
		for _, cur := range open {
			sendChunk(c, cur.v, cur.next)
		}
		if err := c.Flush(); err != nil {
			return nil, lost(err)
		}
		still := open[:0]
		for _, cur := range open {
			r, err := c.Read()
			if err != nil {
				return nil, lost(err)
			}
			more, next, err := takeChunk(cur.v, r, cur.next, &cur.seen)
			if err != nil {
				return nil, err
			}
			if more {
				cur.next = next
				still = append(still, cur)
			}
		}
		open = still
	}
	for i, v := range vals {
		if v != nil && v.Type != codec.TypeString && len(v.Elems)+len(v.Members) == 0 {
			vals[i] = nil // emptied meanwhile; EXEC will notice
		}
	}
	return vals, nil
}

func typeByName(s string) codec.Type {
	switch s {
	case "string":
		return codec.TypeString
	case "hash":
		return codec.TypeHash
	case "set":
		return codec.TypeSet
	case "list":
		return codec.TypeList
	case "zset":
		return codec.TypeZSet
	}
	return codec.TypeNone
}

func sendChunk(c *Conn, v *Value, next uint64) {
	k := v.Key
	from := strconv.FormatUint(next, 10)
	to := strconv.FormatUint(next+chunkSize-1, 10)
	switch v.Type {
	case codec.TypeString:
		c.SendArgs([][]byte{[]byte("GET"), k})
	case codec.TypeList:
		c.SendArgs([][]byte{[]byte("LRANGE"), k, []byte(from), []byte(to)})
	case codec.TypeZSet:
		c.SendArgs([][]byte{[]byte("ZRANGE"), k, []byte(from), []byte(to), []byte("WITHSCORES")})
	case codec.TypeHash:
		c.SendArgs([][]byte{[]byte("HSCAN"), k, []byte(from), []byte("COUNT"), []byte(strconv.Itoa(chunkSize))})
	case codec.TypeSet:
		c.SendArgs([][]byte{[]byte("SSCAN"), k, []byte(from), []byte("COUNT"), []byte(strconv.Itoa(chunkSize))})
	}
}

// takeChunk adds a chunk reply to v and says whether more is to be read
// and from where. SCAN replies may repeat items; seen drops repeats.
func takeChunk(v *Value, r []byte, at uint64, seen *map[string]bool) (more bool, next uint64, err error) {
	if IsError(r) {
		return false, 0, fmt.Errorf("upstream: demotion read of %q: %s", v.Key, ReplyText(r))
	}
	switch v.Type {
	case codec.TypeString:
		p := replyParser{b: r}
		v.Str = p.bulk()
		if v.Str == nil {
			v.Str = []byte{}
		}
		return false, 0, p.err
	case codec.TypeList:
		items, err := ParseBulks(r)
		if err != nil {
			return false, 0, err
		}
		v.Elems = append(v.Elems, items...)
		return len(items) == chunkSize, at + chunkSize, nil
	case codec.TypeZSet:
		items, err := ParseBulks(r)
		if err != nil {
			return false, 0, err
		}
		for i := 0; i+1 < len(items); i += 2 {
			s, err := strconv.ParseFloat(string(items[i+1]), 64)
			if err != nil {
				return false, 0, fmt.Errorf("upstream: score %q of %q: %w", items[i+1], v.Key, err)
			}
			v.Members = append(v.Members, items[i])
			v.Scores = append(v.Scores, s)
		}
		return len(items) == 2*chunkSize, at + chunkSize, nil
	default: // hash, set
		cur, items, err := ParseScan(r)
		if err != nil {
			return false, 0, err
		}
		step := 1
		if v.Type == codec.TypeHash {
			step = 2
		}
		if cur == 0 && at == 0 && *seen == nil {
			v.Elems = append(v.Elems, items...)
			return false, 0, nil
		}
		if *seen == nil {
			*seen = map[string]bool{}
			for i := 0; i < len(v.Elems); i += step {
				(*seen)[string(v.Elems[i])] = true
			}
		}
		for i := 0; i+step-1 < len(items); i += step {
			if (*seen)[string(items[i])] {
				continue
			}
			(*seen)[string(items[i])] = true
			v.Elems = append(v.Elems, items[i:i+step]...)
		}
		return cur != 0, cur, nil
	}
}
