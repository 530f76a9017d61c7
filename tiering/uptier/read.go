package uptier

import (
	"fmt"
	"strconv"

	"github.com/spillway/spillway/codec"
)

// How the demoter reads keys out of the upstream: under WATCH, whole,
// big structures in chunks of chunkSize elements.

// read WATCHes keys and reads each whole; a nil Value is a key that cannot
// be demoted (gone, or a type the cold store does not hold). A stream is
// read in one request, its DUMP payload (decoded by the Conn): its groups,
// consumers and pending entries are not listed by any chunked read.
func (d *Demoter) read(c Conn, keys [][]byte) ([]*Value, error) {
	infos, err := c.WatchDescribe(keys)
	if err != nil {
		return nil, err
	}
	vals := make([]*Value, len(keys))
	for i, k := range keys {
		t := TypeByName(infos[i].Type)
		exp := infos[i].PExpireTime
		skiplist := infos[i].Encoding == "skiplist"
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
	var reqs []Chunk
	for len(open) > 0 {
		reqs = reqs[:0]
		for _, cur := range open {
			reqs = append(reqs, Chunk{Key: cur.v.Key, Type: cur.v.Type, From: cur.next, Count: chunkSize})
		}
		replies, err := c.ReadChunks(reqs)
		if err != nil {
			return nil, err
		}
		still := open[:0]
		for i, cur := range open {
			more, next, err := takeChunk(cur.v, &replies[i], cur.next, &cur.seen)
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
		switch {
		case v == nil || v.Type == codec.TypeString:
		case v.Type == codec.TypeStream:
			if v.Stream == nil {
				vals[i] = nil // gone meanwhile, or a stream the upstream cannot take back
			}
		case len(v.Elems)+len(v.Members) == 0:
			vals[i] = nil // emptied meanwhile; EXEC will notice
		}
	}
	return vals, nil
}

// TypeByName returns the type TYPE names, or codec.TypeNone for a type the
// cold store does not hold (modules) or a missing key.
func TypeByName(s string) codec.Type {
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
	case "stream":
		return codec.TypeStream
	}
	return codec.TypeNone
}

// takeChunk adds a chunk to v and says whether more is to be read and
// from where. SCAN replies may repeat items; seen drops repeats.
func takeChunk(v *Value, r *ChunkReply, at uint64, seen *map[string]bool) (more bool, next uint64, err error) {
	switch v.Type {
	case codec.TypeString:
		v.Str = r.Str
		if v.Str == nil {
			v.Str = []byte{}
		}
		return false, 0, nil
	case codec.TypeStream:
		v.Stream = r.Stream // whole in one reply (DUMP)
		return false, 0, nil
	case codec.TypeList:
		items := r.Items
		v.Elems = append(v.Elems, items...)
		return len(items) == chunkSize, at + chunkSize, nil
	case codec.TypeZSet:
		items := r.Items
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
		cur, items := r.Cursor, r.Items
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
