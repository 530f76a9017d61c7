package tiering

import "math/rand/v2"

// Redis's LFU counter (evict.c), kept for hot keys so that OBJECT FREQ and
// RESTORE ... FREQ behave as under an LFU maxmemory policy: an 8-bit
// logarithmic access counter that starts at 5, grows with probability
// 1/((counter-5)*lfu-log-factor+1) per access and loses one per
// lfu-decay-time minutes without access (never, with 0). The engine keeps
// the two settings (Engine.SetLFU; Redis's defaults 10 and 1 until set)
// and keeps no counter for a cold key. Under an LFU maxmemory-policy the
// counter also orders demotion (Engine.SetLFUDemotion, LRU.demoteLFU);
// Spillway never evicts.

const (
	lfuInitVal   = 5
	lfuLogFactor = 10
	lfuDecayMins = 1
)

// lfuParams are lfu-log-factor and lfu-decay-time.
type lfuParams struct {
	logFactor, decayMins int64
}

// defaultLFU is Redis's default lfu-log-factor and lfu-decay-time.
var defaultLFU = lfuParams{lfuLogFactor, lfuDecayMins}

// SetLFU sets lfu-log-factor and lfu-decay-time (negative values count
// as 0), for the accesses and OBJECT FREQ reads that follow.
func (e *Engine) SetLFU(logFactor, decayMinutes int64) {
	e.lfuLogFactor.Store(max(logFactor, 0))
	e.lfuDecayMins.Store(max(decayMinutes, 0))
}

// SetLFUDemotion makes the hot tier demote by LFU counters (on: an LFU
// maxmemory-policy; see LRU.demoteLFU) or in plain LRU order.
func (e *Engine) SetLFUDemotion(on bool) { e.lfuDemotion.Store(on) }

// lfu returns the engine's LFU settings.
func (e *Engine) lfu() lfuParams {
	return lfuParams{e.lfuLogFactor.Load(), e.lfuDecayMins.Load()}
}

// lfuState is a key's counter (low 8 bits) and the time in unix minutes
// it last decayed (the bits above), packed as Redis packs them in an
// object's lru field; the zero value is a new key's (5, now).
type lfuState int64

func newLFU(counter uint8, nowMs int64) lfuState {
	return lfuState(nowMs/60000<<8 | int64(counter))
}

// decayed is LFUDecrAndReturn: the counter less the decay periods elapsed
// since it last decayed.
func (s lfuState) decayed(p lfuParams, nowMs int64) uint8 {
	if s == 0 {
		return lfuInitVal
	}
	counter := uint8(s)
	if p.decayMins == 0 {
		return counter
	}
	periods := (nowMs/60000 - int64(s)>>8) / p.decayMins
	if periods <= 0 {
		return counter
	}
	if periods > int64(counter) {
		return 0
	}
	return counter - uint8(periods)
}

// touch is updateLFU: decay, then a logarithmic increment.
func (s *lfuState) touch(p lfuParams, nowMs int64) {
	c := s.decayed(p, nowMs)
	if c < 255 {
		base := max(float64(int(c)-lfuInitVal), 0)
		if rand.Float64() < 1/(base*float64(p.logFactor)+1) {
			c++
		}
	}
	*s = newLFU(c, nowMs)
}

// inherit gives e, written over old (nil for a new key), old's counter,
// as Redis keeps a key's counter across overwrites, with the write counted
// as an access unless the command's own lookup already counted it
// (touched: Redis's commands touch a key once, in their lookup); a new key
// keeps the zero state (5).
func (e *Entry) inherit(old *Entry, touched bool, p lfuParams, nowMs int64) {
	if old != nil && old != e {
		e.lfu = old.lfu
		if !touched {
			e.lfu.touch(p, nowMs)
		}
	}
}

// Freq returns key's LFU counter as OBJECT FREQ reports it (decayed, not
// incremented): 0 for a cold key, which keeps no counter. It reports false
// if key does not exist.
func (tx *Tx) Freq(db int, key []byte) (int64, bool, error) {
	e, wasHot, err := tx.live(tx.pdb(db), key)
	if err != nil || e == nil {
		return 0, false, err
	}
	if !wasHot {
		return 0, true, nil
	}
	return int64(e.lfu.decayed(tx.e.lfu(), tx.now)), true, nil
}

// SetFreq sets a hot key's LFU counter (RESTORE ... FREQ); for a cold or
// missing key it does nothing and reports false.
func (tx *Tx) SetFreq(db int, key []byte, freq uint8) (bool, error) {
	e, wasHot, err := tx.live(tx.pdb(db), key)
	if err != nil || e == nil || !wasHot {
		return false, err
	}
	e.lfu = newLFU(freq, tx.now)
	return true, nil
}
