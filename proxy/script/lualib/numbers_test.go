package lualib

import (
	"encoding/binary"
	"encoding/hex"
	"math"
	"math/rand"
	"strconv"
	"strings"
	"testing"

	"github.com/spillway/spillway/proxy/cstr"
)

// These tests check the C-compatibility helpers directly against the C
// library inside redis-server: formatG against sprintf("%.<p>g") (through
// Lua's string.format) and str2number against Lua's tonumber (strtod).

func sampleDoubles(r *rand.Rand) []float64 {
	xs := []float64{0, math.Copysign(0, -1), 1, -1, 0.1, 0.5, 1.5, 2.5, 1e14, 1e15, 1e-4, 1e-5, 123456789012345,
		99999999999999.5, 9.99999999999995e-5, 0.000099999999999999, 5e-324, math.MaxFloat64, math.Inf(1), math.Inf(-1),
		math.NaN(), -math.NaN(), 1 << 53, 1<<53 + 1, 1 << 63, 0.30000000000000004, 2.675, 1.005, 1e21, 1e22, 1e23}
	for i := 0; i < 1500; i++ {
		xs = append(xs, math.Float64frombits(r.Uint64()))
	}
	for i := 0; i < 1500; i++ {
		// Decimal values with few digits sit on rounding boundaries.
		m := float64(r.Intn(2000000) - 1000000)
		xs = append(xs, m*math.Pow(10, float64(r.Intn(40)-20))/2)
	}
	return xs
}

func TestFormatGAgainstRedis(t *testing.T) {
	srv := sharedRedis(t)
	xs := sampleDoubles(rand.New(rand.NewSource(1)))
	buf := make([]byte, 8*len(xs))
	for i, x := range xs {
		binary.LittleEndian.PutUint64(buf[8*i:], math.Float64bits(x))
	}
	script := `local out = {} for i = 1, #ARGV[1] / 8 do local x = struct.unpack('<d', ARGV[1], (i - 1) * 8 + 1) ` +
		`out[i] = string.format('%.' .. (i % 14 + 1) .. 'g', x) .. ' ' .. string.format('%.14g', x) end return out`
	r, err := srv.eval(script, string(buf))
	if err != nil || r.kind != '*' || len(r.arr) != len(xs) {
		t.Fatalf("redis: %v %v", clip(r.String()), err)
	}
	for i, x := range xs {
		got := cstr.FormatG(x, (i+1)%14+1) + " " + cstr.FormatG(x, 14)
		if got != r.arr[i].str {
			t.Errorf("%v (bits %#x): redis %q, got %q", x, math.Float64bits(x), r.arr[i].str, got)
		}
	}
}

func TestStr2NumberAgainstRedis(t *testing.T) {
	srv := sharedRedis(t)
	inputs := []string{"", " ", "1", " 1 ", "\t1\n", "1 x", "0x10", "0X1p4", "0x", "0x.8", "0x1.8p1", "0xg", "1e", "1e+",
		"1e5", "1E-5", ".5", "5.", ".", "-.5", "+.5", "+-1", "--1", "inf", "-inf", "INF", "infinity", "infinit", "nan",
		"-nan", "nan(1)", "nan()", "1e400", "-1e400", "1e-400", "4.9e-324", "2.4e-324", "1\x00", "1\x002", "0x1p-1074",
		"0x1p-1075", "0x1.fffffffffffff8p1023", "123456789012345678901234567890", "1_000", "١", "0b101", "0o7", "1f",
		"9007199254740993", "0.1e1", "\v5", "\f5", "5\v", "1e-2147483649", "1e2147483648", "0x1p99999999999"}
	r := rand.New(rand.NewSource(2))
	alphabet := "0123456789.eE+-xXpPabcfinINFaty \t"
	for i := 0; i < 1500; i++ {
		var b strings.Builder
		for j := r.Intn(10) + 1; j > 0; j-- {
			b.WriteByte(alphabet[r.Intn(len(alphabet))])
		}
		inputs = append(inputs, b.String())
	}
	script := `local out = {} for i = 1, #ARGV do local v = tonumber(ARGV[i]) ` +
		`if v == nil then out[i] = 'nil' else out[i] = struct.pack('<d', v) end end return out`
	rep, err := srv.eval(script, inputs...)
	if err != nil || rep.kind != '*' || len(rep.arr) != len(inputs) {
		t.Fatalf("redis: %v %v", clip(rep.String()), err)
	}
	for i, s := range inputs {
		want := rep.arr[i].str
		if want != "nil" {
			want = hex.EncodeToString([]byte(want))
		}
		got := "nil"
		if v, ok := StrToNumber(s); ok {
			var b [8]byte
			binary.LittleEndian.PutUint64(b[:], math.Float64bits(v))
			got = hex.EncodeToString(b[:])
		}
		if got != want {
			t.Errorf("tonumber(%s): redis %s, got %s", strconv.Quote(s), want, got)
		}
	}
}
