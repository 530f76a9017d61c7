package config

import (
	"os"
	"testing"
)

const oblDefault = "normal 0 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60"

// TestOutputLimitsSet replays CONFIG SET client-output-buffer-limit values
// whose replies and effects were read from redis-server 7.0.15; each step
// applies to the result of the previous one.
func TestOutputLimitsSet(t *testing.T) {
	const (
		errArgs  = "ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') - Wrong number of arguments in buffer limit configuration."
		errClass = "ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') - Invalid client class specified in buffer limit configuration."
		errValue = "ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') - Error in hard, soft or soft_seconds setting in buffer limit configuration."
	)
	steps := []struct {
		set     string
		wantErr string
		want    string // CONFIG GET after the step
	}{
		{"pubsub 1mb 512kb 1", "", "normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 524288 1"},
		{"normal 0 0 0", "", "normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 524288 1"},
		{"pubsub 1mb 512kb", errArgs, ""},
		{"foo 1 2 3", errClass, ""},
		{"master 1 1 1", errClass, ""},
		{"pubsub x 1 1", errValue, ""},
		{"pubsub 1 x 1", errValue, ""},
		{"pubsub 1 1 x", errValue, ""},
		{"pubsub 1 1 -1", errValue, ""},
		{"pubsub -1 1 1", errValue, ""},
		{"pubsub 1.5 1 1", errValue, ""},
		{"pubsub 1 2 3 4", errArgs, ""},
		{"pubsub 1  1 1", errArgs, ""},
		{"pubsub 1 1 1 ", errArgs, ""},
		{" pubsub 1 1 1", errArgs, ""},
		{"pubsub\t1 1 1", errArgs, ""},
		{`pubsub 1 1 ""`, errValue, ""},
		{"pubsub 1g 2G 99999999999999999999", errValue, ""},
		{"normal 1 2 2147483648", errValue, ""},
		{"normal 1 2 0x10", errValue, ""},
		{"pubsub 1 1 1 master 1 1 1", errClass, ""},
		{"pubsub x 1 1 master 1 1 1", errValue, ""},
		{"", "", "normal 0 0 0 slave 268435456 67108864 60 pubsub 1048576 524288 1"},
		{"replica 1 2 3", "", "normal 0 0 0 slave 1 2 3 pubsub 1048576 524288 1"},
		{"slave 1k 2k 3 PUBSUB 4K 5 6", "", "normal 0 0 0 slave 1000 2000 3 pubsub 4000 5 6"},
		{"pubsub 1 1 1 pubsub 2 2 2", "", "normal 0 0 0 slave 1000 2000 3 pubsub 2 2 2"},
		{"pubsub 1 1 01", "", "normal 0 0 0 slave 1000 2000 3 pubsub 1 1 1"},
		{"pubsub 1 1 +1", "", "normal 0 0 0 slave 1000 2000 3 pubsub 1 1 1"},
		{"normal 1 2 4294967297", "", "normal 1 2 1 slave 1000 2000 3 pubsub 1 1 1"},
		{"Normal 18446744073709551615 18446744073709551616 2147483647", "",
			"normal 18446744073709551615 18446744073709551615 2147483647 slave 1000 2000 3 pubsub 1 1 1"},
		{"normal 1kb 1 1", "", "normal 1024 1 1 slave 1000 2000 3 pubsub 1 1 1"},
		{"pubsub 1 1 ", "", "normal 1024 1 1 slave 1000 2000 3 pubsub 1 1 0"},
		{"pubsub   ", "", "normal 1024 1 1 slave 1000 2000 3 pubsub 0 0 0"},
		{"normal 1 2 \t5", "", "normal 1 2 5 slave 1000 2000 3 pubsub 0 0 0"},
		{"normal 1 2 -0", "", "normal 1 2 0 slave 1000 2000 3 pubsub 0 0 0"},
		{oblDefault, "", oblDefault},
	}
	c := Default()
	if got := mustValue(t, c, "client-output-buffer-limit"); got != oblDefault {
		t.Fatalf("default = %q", got)
	}
	want := oblDefault
	for _, st := range steps {
		err := c.Set([][2]string{{"client-output-buffer-limit", st.set}})
		switch {
		case st.wantErr != "" && (err == nil || err.Error() != st.wantErr):
			t.Errorf("SET %q = %v, want %s", st.set, err, st.wantErr)
		case st.wantErr == "" && err != nil:
			t.Errorf("SET %q = %v", st.set, err)
		}
		if st.wantErr == "" {
			want = st.want
		}
		if got := mustValue(t, c, "client-output-buffer-limit"); got != want {
			t.Errorf("after SET %q: GET = %q, want %q", st.set, got, want)
		}
	}
}

func TestOutputLimitsAccessor(t *testing.T) {
	c := Default()
	tests := []struct {
		class ClientClass
		want  OutputBufferLimit
	}{
		{ClassNormal, OutputBufferLimit{}},
		{ClassReplica, OutputBufferLimit{256 << 20, 64 << 20, 60}},
		{ClassPubSub, OutputBufferLimit{32 << 20, 8 << 20, 60}},
		{ClientClass(7), OutputBufferLimit{}},
	}
	for _, tc := range tests {
		if got := c.ClientOutputBufferLimit(tc.class); got != tc.want {
			t.Errorf("default %v: %+v, want %+v", tc.class, got, tc.want)
		}
	}
	if err := c.Set([][2]string{{"client-output-buffer-limit", "pubsub 1mb 512kb 1"}}); err != nil {
		t.Fatal(err)
	}
	if got, want := c.ClientOutputBufferLimit(ClassPubSub), (OutputBufferLimit{1 << 20, 512 << 10, 1}); got != want {
		t.Errorf("after SET: %+v, want %+v", got, want)
	}
	var seen []string
	if err := c.OnChange("client-output-buffer-limit", func(v string) { seen = append(seen, v) }); err != nil {
		t.Fatal(err)
	}
	c.Set([][2]string{{"client-output-buffer-limit", "pubsub 1mb 512kb 1"}}) // no change
	c.Set([][2]string{{"client-output-buffer-limit", "normal 1 1 1"}})
	if len(seen) != 1 || seen[0] != "normal 1 1 1 slave 268435456 67108864 60 pubsub 1048576 524288 1" {
		t.Errorf("OnChange saw %q", seen)
	}
}

// TestOutputLimitsParse: file lines and command-line options apply to the
// value built so far, each changing only the classes it names.
func TestOutputLimitsParse(t *testing.T) {
	tests := []struct {
		file    string
		args    []string
		want    string
		wantErr bool
	}{
		{"client-output-buffer-limit pubsub 1mb 512kb 1\nclient-output-buffer-limit normal 1 2 3\n", nil,
			"normal 1 2 3 slave 268435456 67108864 60 pubsub 1048576 524288 1", false},
		{"client-output-buffer-limit pubsub 1mb 512kb 1\n", []string{"--client-output-buffer-limit", "replica", "1", "2", "3"},
			"normal 0 0 0 slave 1 2 3 pubsub 1048576 524288 1", false},
		{"", []string{"--client-output-buffer-limit", "pubsub 1 2 3"},
			"normal 0 0 0 slave 268435456 67108864 60 pubsub 1 2 3", false},
		{"client-output-buffer-limit \"pubsub 1 2 3\"\n", nil,
			"normal 0 0 0 slave 268435456 67108864 60 pubsub 1 2 3", false},
		{"client-output-buffer-limit pubsub 1mb 512kb\n", nil, "", true},
		{"client-output-buffer-limit master 1 1 1\n", nil, "", true},
	}
	for _, tc := range tests {
		c, err := Parse(append([]string{writeConf(t, tc.file)}, tc.args...))
		if tc.wantErr {
			if err == nil {
				t.Errorf("%q %q: no error", tc.file, tc.args)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q %q: %v", tc.file, tc.args, err)
			continue
		}
		if got := mustValue(t, c, "client-output-buffer-limit"); got != tc.want {
			t.Errorf("%q %q: %q, want %q", tc.file, tc.args, got, tc.want)
		}
	}
}

// TestOutputLimitsRewrite checks CONFIG REWRITE against files written by
// redis-server 7.0.15 in the same situations: one line per class, each
// reusing the next of the setting's lines in the file, else appended only
// when the class differs from the default.
func TestOutputLimitsRewrite(t *testing.T) {
	tests := []struct {
		name string
		file string
		set  string
		want string
	}{
		{
			name: "lines reused in order, changed class appended",
			file: "client-output-buffer-limit pubsub 1mb 512kb 1\nclient-output-buffer-limit normal 0 0 0\n# comment\n",
			set:  "slave 1000 2000 3",
			want: "client-output-buffer-limit normal 0 0 0\nclient-output-buffer-limit replica 1000 2000 3\n# comment\n" +
				"\n# Generated by CONFIG REWRITE\nclient-output-buffer-limit pubsub 1mb 512kb 1\n",
		},
		{
			name: "back to defaults keeps lines",
			file: "client-output-buffer-limit normal 0 0 0\nclient-output-buffer-limit replica 1000 2000 3\n",
			set:  oblDefault,
			want: "client-output-buffer-limit normal 0 0 0\nclient-output-buffer-limit replica 256mb 64mb 60\n",
		},
		{
			name: "not in file",
			file: "port 7000\n",
			set:  "pubsub 1000 2000 3",
			want: "port 7000\n\n# Generated by CONFIG REWRITE\nclient-output-buffer-limit pubsub 1000 2000 3\n",
		},
		{
			name: "defaults not in file",
			file: "port 7000\n",
			set:  "",
			want: "port 7000\n",
		},
		{
			name: "orphans removed",
			file: "client-output-buffer-limit pubsub 1 1 1\nclient-output-buffer-limit pubsub 2 2 2\n" +
				"client-output-buffer-limit pubsub 3 3 3\nclient-output-buffer-limit pubsub 4 4 4\n",
			set: "pubsub 32mb 8mb 60",
			want: "client-output-buffer-limit normal 0 0 0\nclient-output-buffer-limit replica 256mb 64mb 60\n" +
				"client-output-buffer-limit pubsub 32mb 8mb 60\n",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := writeConf(t, tc.file)
			c, err := Parse([]string{p})
			if err != nil {
				t.Fatal(err)
			}
			if err := c.Set([][2]string{{"client-output-buffer-limit", tc.set}}); err != nil {
				t.Fatal(err)
			}
			if err := c.Rewrite(); err != nil {
				t.Fatal(err)
			}
			got, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tc.want {
				t.Errorf("file:\n%s\nwant:\n%s", got, tc.want)
			}
			// The rewritten file loads back to the same value.
			c2, err := Parse([]string{p})
			if err != nil {
				t.Fatal(err)
			}
			if a, b := mustValue(t, c, "client-output-buffer-limit"), mustValue(t, c2, "client-output-buffer-limit"); a != b {
				t.Errorf("reloaded %q, want %q", b, a)
			}
		})
	}
}
