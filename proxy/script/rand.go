package script

// rand48 is Redis's redisLrand48 (rand.c): the 48-bit linear congruential
// generator of lrand48, seeded as an unseeded libc would be. Redis shares one
// such state between every script and function of the server and never
// reseeds it except through math.randomseed, so math.random's sequence is
// a function of the scripts run since start-up.
type rand48 struct{ x uint64 }

const (
	rand48A    = 0x5DEECE66D
	rand48C    = 0xB
	rand48Mask = 1<<48 - 1
	// randMax is REDIS_LRAND48_MAX.
	randMax = 1<<31 - 1
)

func newRand48() rand48 { return rand48{x: 0x1234ABCD330E} }

// lrand48 advances the state and returns its top 31 bits.
func (r *rand48) lrand48() int32 {
	r.x = (rand48A*r.x + rand48C) & rand48Mask
	return int32(r.x >> 17)
}

// srand48 is redisSrand48: the seed's 32 bits become the high bits of the
// state, 0x330E the low ones.
func (r *rand48) srand48(seed int32) {
	r.x = uint64(uint32(seed))<<16 | 0x330E
}
