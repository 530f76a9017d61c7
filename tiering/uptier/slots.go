package uptier

import (
	"sync"
	"time"

	"github.com/spillway/spillway/tiering"
)

// SlotCount is the number of Redis Cluster hash slots.
const SlotCount = 16384

// crc16Table is CRC-16/XMODEM (polynomial 0x1021, initial value 0), the
// checksum Redis Cluster maps keys to slots with.
var crc16Table = func() (t [256]uint16) {
	for i := range t {
		c := uint16(i) << 8
		for j := 0; j < 8; j++ {
			if c&0x8000 != 0 {
				c = c<<1 ^ 0x1021
			} else {
				c <<= 1
			}
		}
		t[i] = c
	}
	return t
}()

func crc16(b []byte) uint16 {
	var c uint16
	for _, x := range b {
		c = c<<8 ^ crc16Table[byte(c>>8)^x]
	}
	return c
}

// KeySlot returns key's Redis Cluster hash slot (0 to 16383), by Redis's
// rule: when the key holds a '{' followed later by a '}' with at least one
// byte between them, only the bytes between the first '{' and the first
// '}' after it (the hash tag) are hashed; otherwise the whole key is.
func KeySlot(key []byte) int {
	for i, b := range key {
		if b != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j > i+1 {
					key = key[i+1 : j]
				}
				return int(crc16(key) & (SlotCount - 1))
			}
		}
		break
	}
	return int(crc16(key) & (SlotCount - 1))
}

// slotScanStep bounds the keys one step of a slot scan visits under the
// engine lock.
const slotScanStep = 4096

// ColdKeysInSlot calls fn with each live key of db in the cold store whose
// hash slot is slot, until fn returns false. The store is ordered by key
// hash, not slot, so this visits every cold key of db (in steps of
// slotScanStep keys, each under the engine lock for that step only): its
// cost is the database's cold key count, whatever the slot holds. Keys
// demoted or dropped while it runs may or may not be seen; a key present
// throughout is seen once. The keys are fn's to keep. A slot of -1 takes
// every key.
func ColdKeysInSlot(eng *tiering.Engine, db, slot int, fn func(key []byte) bool) error {
	match := func(k []byte) bool { return KeySlot(k) == slot }
	if slot < 0 {
		match = nil
	}
	var cursor uint64
	var keys [][]byte
	for {
		var next uint64
		err := eng.View(func(tx *tiering.Tx) error {
			var err error
			keys, next, err = tx.Scan(db, cursor, tiering.ScanOptions{Count: slotScanStep, Match: match}, keys[:0])
			return err
		})
		if err != nil {
			return err
		}
		for _, k := range keys {
			if !fn(k) {
				return nil
			}
		}
		keys = keys[:0]
		if next == 0 {
			return nil
		}
		cursor = next
	}
}

// demoteBySlot demotes keys in groups of one hash slot each (Demote in
// front of a cluster node), in the order the slots first appear, and
// returns how many moved; it stops at the first error.
func (d *Demoter) demoteBySlot(db int, keys [][]byte) (int, error) {
	groups := map[int][][]byte{}
	var order []int
	for _, k := range keys {
		sl := KeySlot(k)
		if _, ok := groups[sl]; !ok {
			order = append(order, sl)
		}
		groups[sl] = append(groups[sl], k)
	}
	total := 0
	for _, sl := range order {
		n, err := d.demote(db, groups[sl])
		total += n
		if err != nil {
			return total, err
		}
	}
	return total, nil
}

// SlotDirectory lists the cold keys of each database by hash slot, for
// CLUSTER COUNTKEYSINSLOT and GETKEYSINSLOT in front of a cluster node.
// The store orders keys by hash, not slot, so a database's directory is
// built by one pass over its cold keys on the first query, then kept up
// to date: the demoter reports the keys it moves in (Demoted), and the
// keys that left the store since (reloaded, deleted, migrated, expired)
// are found gone and dropped when their slot is queried (each candidate
// is looked up, so answers are exact). A directory unused for
// slotDirIdle is freed at the next demotion: it costs the key names of
// every cold key, and a reshard needs it for its duration only.
//
// Callers serialize queries against demotions' store writes (the front's
// census: queries hold it exclusively, demotions shared), so that a key
// moving in while a directory is built is either scanned or reported.
type SlotDirectory struct {
	eng     *tiering.Engine
	mu      sync.Mutex
	dbs     map[int]map[int]map[string]struct{} // db -> slot -> keys
	lastUse time.Time
}

// slotDirIdle is how long a directory is kept without queries.
const slotDirIdle = time.Minute

// NewSlotDirectory returns an empty directory of eng's cold keys.
func NewSlotDirectory(eng *tiering.Engine) *SlotDirectory {
	return &SlotDirectory{eng: eng, dbs: map[int]map[int]map[string]struct{}{}}
}

// Demoted records keys of db just written to the store (DemoterOptions.
// Demoted). It costs nothing while no directory is built.
func (s *SlotDirectory) Demoted(db int, keys [][]byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.dbs) == 0 {
		return
	}
	if time.Since(s.lastUse) > slotDirIdle {
		s.dbs = map[int]map[int]map[string]struct{}{}
		return
	}
	dir := s.dbs[db]
	if dir == nil {
		return
	}
	for _, k := range keys {
		addSlotKey(dir, KeySlot(k), string(k))
	}
}

func addSlotKey(dir map[int]map[string]struct{}, slot int, key string) {
	m := dir[slot]
	if m == nil {
		m = map[string]struct{}{}
		dir[slot] = m
	}
	m[key] = struct{}{}
}

// Keys calls fn with each live cold key of db in slot, until fn returns
// false, building db's directory first if needed.
func (s *SlotDirectory) Keys(db, slot int, fn func(key []byte) bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lastUse = time.Now()
	dir := s.dbs[db]
	if dir == nil {
		dir = map[int]map[string]struct{}{}
		err := ColdKeysInSlot(s.eng, db, -1, func(k []byte) bool {
			addSlotKey(dir, KeySlot(k), string(k))
			return true
		})
		if err != nil {
			return err
		}
		s.dbs[db] = dir
	}
	cands := dir[slot]
	if len(cands) == 0 {
		return nil
	}
	var live [][]byte
	_, err := s.eng.Update(func(tx *tiering.Tx) error {
		for k := range cands {
			e, err := tx.PeekNoTouch(db, []byte(k))
			if err != nil {
				return err
			}
			if e == nil {
				delete(cands, k)
				continue
			}
			live = append(live, []byte(k))
		}
		return nil
	})
	if err != nil {
		return err
	}
	for _, k := range live {
		if !fn(k) {
			return nil
		}
	}
	return nil
}
