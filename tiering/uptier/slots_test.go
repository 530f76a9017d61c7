package uptier

import "testing"

// TestKeySlot checks CRC16 against the check value the Redis Cluster
// specification gives (CRC16 of "123456789" is 0x31C3) and the hash tag
// rules by the specification's examples: keys whose tags are equal share
// a slot with the tag alone; an empty tag, or no closing brace, hashes the
// whole key. TestClusterSidecars compares KeySlot with a real node's
// CLUSTER KEYSLOT for 30,000 keys.
func TestKeySlot(t *testing.T) {
	if got := crc16([]byte("123456789")); got != 0x31C3 {
		t.Fatalf("crc16(123456789) = %#x; want 0x31C3", got)
	}
	whole := func(k string) int { return int(crc16([]byte(k)) & (SlotCount - 1)) }
	for _, c := range []struct{ key, hashed string }{
		{"123456789", "123456789"},
		{"{user1000}.following", "user1000"},
		{"{user1000}.followers", "user1000"},
		{"foo{}{bar}", "foo{}{bar}"},
		{"foo{{bar}}zap", "{bar"},
		{"foo{bar}{zap}", "bar"},
		{"foo{bar", "foo{bar"},
		{"}{x}", "x"},
		{"", ""},
	} {
		if got, want := KeySlot([]byte(c.key)), whole(c.hashed); got != want {
			t.Errorf("KeySlot(%q) = %d; want that of %q, %d", c.key, got, c.hashed, want)
		}
	}
	if got := KeySlot([]byte("123456789")); got != 0x31C3&(SlotCount-1) {
		t.Fatalf("KeySlot(123456789) = %d", got)
	}
}
