//go:build linux && cgo

package main

// Pebble allocates its block cache and memtables with C malloc (cgo
// builds), from whichever thread a goroutine needing a block runs on.
// glibc's default of 8 malloc arenas per core then keeps freed blocks
// spread over up to 16 arenas on two cores: in a bulk load of 10 million
// small keys under maxmemory 64mb that was 54 MB of C memory for 16 MB of
// cache and memtables, against 22 MB with one arena. The constructor below
// sets one arena before the Go runtime starts its threads (a mallopt from
// Go would come after some arenas exist), unless MALLOC_ARENA_MAX is set:
// the environment then decides, as glibc documents.

/*
#include <malloc.h>
#include <stdlib.h>

__attribute__((constructor)) static void spillway_malloc_arenas(void) {
#ifdef M_ARENA_MAX
	if (getenv("MALLOC_ARENA_MAX") == NULL) {
		mallopt(M_ARENA_MAX, 1);
	}
#endif
}
*/
import "C"
