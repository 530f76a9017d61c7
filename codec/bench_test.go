package codec

import (
	"testing"
)

var (
	benchKey    = []byte("user:1234567890:profile")
	benchField  = []byte("last_login_timestamp")
	benchMember = []byte("player:42")
	benchString = AppendMeta(nil, &Meta{Type: TypeString, ExpireAt: 1700000000000, Value: []byte("some string value")})
	benchList   = AppendMeta(nil, &Meta{Type: TypeList, Version: 3, Count: 2, Head: ListStartIndex - 1, Tail: ListStartIndex + 1})
	benchData   = AppendFieldKey(nil, 0, benchKey, 77, benchField)
	benchScore  = func() []byte {
		b, _ := AppendScoreKey(nil, 0, benchKey, 77, 3.25, benchMember)
		return b
	}()
)

// hotPaths are the builders and parsers used per command; each must run
// without allocating when given a buffer with room.
var hotPaths = []struct {
	name string
	fn   func(buf []byte) []byte
}{
	{"AppendMetaKey", func(buf []byte) []byte { return AppendMetaKey(buf, 0, benchKey) }},
	{"AppendMeta/list", func(buf []byte) []byte {
		return AppendMeta(buf, &Meta{Type: TypeList, Version: 1, Count: 1, Head: 1, Tail: 2})
	}},
	{"AppendMeta/string", func(buf []byte) []byte {
		return AppendMeta(buf, &Meta{Type: TypeString, Value: benchField})
	}},
	{"AppendDataPrefix", func(buf []byte) []byte { return AppendDataPrefix(buf, 0, benchKey, 77) }},
	{"AppendFieldKey", func(buf []byte) []byte { return AppendFieldKey(buf, 0, benchKey, 77, benchField) }},
	{"AppendListKey", func(buf []byte) []byte { return AppendListKey(buf, 0, benchKey, 77, ListStartIndex) }},
	{"AppendScoreKey", func(buf []byte) []byte {
		b, _ := AppendScoreKey(buf, 0, benchKey, 77, -1.5, benchMember)
		return b
	}},
	{"AppendScore", func(buf []byte) []byte { b, _ := AppendScore(buf, 2.5); return b }},
	{"AppendExpiryKey", func(buf []byte) []byte { return AppendExpiryKey(buf, 1700000000000, 0, benchKey) }},
	{"AppendGarbageKey", func(buf []byte) []byte { return AppendGarbageKey(buf, 99) }},
	{"AppendGarbageValue", func(buf []byte) []byte { return AppendGarbageValue(buf, 0, benchKey, 77, 1000) }},
	{"AppendPrefixEnd", func(buf []byte) []byte { b, _ := AppendPrefixEnd(buf, benchData); return b }},
	{"DecodeMeta/string", func(buf []byte) []byte {
		var m Meta
		_ = DecodeMeta(benchString, &m)
		return m.Value
	}},
	{"DecodeMeta/list", func(buf []byte) []byte {
		var m Meta
		_ = DecodeMeta(benchList, &m)
		return buf
	}},
	{"ParseDataKey/field", func(buf []byte) []byte {
		_, k, _, _, _, _ := ParseDataKey(benchData)
		return k
	}},
	{"ParseDataKey/score", func(buf []byte) []byte {
		_, k, _, _, _, _ := ParseDataKey(benchScore)
		return k
	}},
}

func TestHotPathsDoNotAllocate(t *testing.T) {
	buf := make([]byte, 0, 256)
	for _, hp := range hotPaths {
		allocs := testing.AllocsPerRun(100, func() { hp.fn(buf[:0]) })
		if allocs != 0 {
			t.Errorf("%s allocates %.1f times per call", hp.name, allocs)
		}
	}
}

func BenchmarkCodec(b *testing.B) {
	buf := make([]byte, 0, 256)
	for _, hp := range hotPaths {
		b.Run(hp.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				buf = hp.fn(buf[:0])
			}
		})
	}
}
